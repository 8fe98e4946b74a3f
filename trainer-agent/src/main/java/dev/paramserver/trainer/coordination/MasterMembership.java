package dev.paramserver.trainer.coordination;

import dev.paramserver.proto.v1.AcquireLockRequest;
import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.LockName;
import dev.paramserver.proto.v1.ReleaseLockRequest;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A membership the leading master holds on the trainer's behalf while its {@link AttendLoop} runs;
 * the job's locks are taken with AcquireLock and released with ReleaseLock, held under it.
 */
final class MasterMembership implements Membership, JobLocks {
  private static final Logger log = LoggerFactory.getLogger(MasterMembership.class);

  private final CoordinationClient client;
  private final AttendLoop attend;
  private final String trainerId;
  private final String job;

  MasterMembership(CoordinationClient client, AttendLoop attend) {
    this.client = client;
    this.attend = attend;
    this.trainerId = attend.joined().getTrainerId();
    this.job = attend.joined().getJob();
  }

  @Override
  public String trainerId() {
    return trainerId;
  }

  @Override
  public String job() {
    return job;
  }

  @Override
  public JobLocks locks() {
    return this;
  }

  @Override
  public boolean isAlive() {
    AttendLoop.State s = attend.state();
    return s != AttendLoop.State.LOST && s != AttendLoop.State.CLOSED;
  }

  @Override
  public void onLost(Runnable listener) {
    attend.onLost(listener);
  }

  @Override
  public void close() {
    attend.close();
  }

  @Override
  public Optional<InitLock> tryInitialisation() {
    AcquireLockResponse r = acquire(LockName.INIT_PARAMETERS, 0);
    return switch (r.getOutcome()) {
      case GRANTED -> Optional.of(new MasterInitLock(blankToNull(r.getDone())));
      case DONE -> {
        log.info(
            "the master reports the pservers initialised (init {}); waiting for them to say so",
            r.getDone());
        yield Optional.empty();
      }
      default -> {
        log.debug("trainer {} initialises the pservers", r.getHolder());
        yield Optional.empty();
      }
    };
  }

  @Override
  public boolean claimExport() {
    return acquire(LockName.EXPORT_MODEL, 0).getOutcome() == AcquireLockResponse.Outcome.GRANTED;
  }

  /** GRANTED also when this trainer held it already; when the master cannot be asked, yes. */
  @Override
  public boolean claimEvaluation(int pass) {
    try {
      AcquireLockResponse r = acquire(LockName.EVALUATE_PASS, pass);
      if (r.getOutcome() == AcquireLockResponse.Outcome.GRANTED
          || trainerId.equals(r.getHolder())) {
        return true;
      }
      log.debug("pass {} is evaluated by trainer {}", pass, r.getHolder());
      return false;
    } catch (RuntimeException e) {
      if (e instanceof dev.paramserver.rpc.StoppedException) {
        throw e;
      }
      log.warn("cannot claim the evaluation of pass {} ({}); evaluating it", pass, e.getMessage());
      return true;
    }
  }

  private AcquireLockResponse acquire(LockName lock, int pass) {
    AcquireLockRequest req =
        AcquireLockRequest.newBuilder().setTrainerId(trainerId).setLock(lock).setPass(pass).build();
    return client.call("taking lock " + lock, stub -> stub.acquireLock(req));
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  /** INIT_PARAMETERS, held: released with the initialisation's id once done. */
  private final class MasterInitLock implements InitLock {
    private final String previous;
    private String done;

    MasterInitLock(String previous) {
      this.previous = previous;
    }

    @Override
    public Optional<String> previousInitId() {
      return Optional.ofNullable(previous);
    }

    @Override
    public void done(String initId) {
      done = initId;
    }

    /** One attempt: a lock not released ends with the membership. */
    @Override
    public void close() {
      ReleaseLockRequest req =
          ReleaseLockRequest.newBuilder()
              .setTrainerId(trainerId)
              .setLock(LockName.INIT_PARAMETERS)
              .setDone(done == null ? "" : done)
              .build();
      try {
        if (client
            .callOnce("releasing the initialisation lock", s -> s.releaseLock(req))
            .isEmpty()) {
          log.warn("cannot release the initialisation lock (it ends with our membership)");
        }
      } catch (RuntimeException e) {
        log.warn(
            "cannot release the initialisation lock (it ends with our membership): {}",
            e.getMessage());
      }
    }
  }
}
