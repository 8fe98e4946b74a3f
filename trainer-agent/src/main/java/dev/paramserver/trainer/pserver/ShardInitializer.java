package dev.paramserver.trainer.pserver;

import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.coordination.JobLocks;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes sure every pserver holds its blocks. One trainer at a time initialises: the one that takes
 * the job's initialisation lock ({@code init_ps/lock}, under its membership); if it dies midway the
 * lock ends with its membership and another trainer takes over. Uninitialised pservers (a fresh
 * job, or a pserver restarted without a checkpoint) get the values the initialising trainer has:
 * the deterministic initial values at the start, its latest pulled values later.
 */
public final class ShardInitializer {
  private static final Logger log = LoggerFactory.getLogger(ShardInitializer.class);

  private final JobLocks locks;
  private final PserverDirectory directory;
  private final RequestPlanner planner;
  private final CallPolicy calls;

  /**
   * @param locks the job's locks, taken under this trainer's membership
   */
  public ShardInitializer(
      JobLocks locks, PserverDirectory directory, RequestPlanner planner, CallPolicy calls) {
    this.locks = locks;
    this.directory = directory;
    this.planner = planner;
    this.calls = calls;
  }

  /**
   * Blocks until every pserver is initialised, initialising them if this trainer wins the lock. A
   * pserver that owns nothing in the current placement map (new, filled by moves, or drained) is
   * left alone: trainers never initialise it.
   */
  public void ensureAll(Parameters values) {
    Routing routing = planner.layout().routing();
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < routing.pservers(); i++) {
      if (routing.ownsAnything(i)) {
        all.add(i);
      }
    }
    ensure(all, values);
  }

  /**
   * Re-initialises one pserver that lost its state (if no other trainer did it meanwhile); not one
   * that owns nothing in the current placement map (a pserver added to a scaled job answers
   * NOT_INITIALIZED until moves fill it).
   */
  public void reinitialise(int ps, Parameters values) {
    if (!planner.layout().routing().ownsAnything(ps)) {
      log.info(
          "pserver {} owns nothing in {}: not initialising it", ps, planner.layout().routing());
      return;
    }
    ensure(List.of(ps), values);
  }

  private void ensure(List<Integer> pservers, Parameters values) {
    long[] lastLog = {0};
    calls
        .retry(Duration.ofMillis(200), Duration.ofSeconds(2))
        .until(
            "initialising pservers",
            attempt -> {
              List<Integer> missing = uninitialised(pservers);
              if (missing.isEmpty()) {
                return Optional.of(true);
              }
              if (initialiseUnderLock(missing, values)) {
                return uninitialised(pservers).isEmpty() ? Optional.of(true) : Optional.empty();
              }
              if (System.currentTimeMillis() - lastLog[0] > 5000) {
                log.info("waiting for another trainer to initialise pservers {}", missing);
                lastLog[0] = System.currentTimeMillis();
              }
              return Optional.empty();
            });
  }

  /** Initialises {@code missing} if this trainer takes the lock; returns whether it did. */
  private boolean initialiseUnderLock(List<Integer> missing, Parameters values) {
    Optional<JobLocks.InitLock> held = locks.tryInitialisation();
    if (held.isEmpty()) {
      return false;
    }
    try (JobLocks.InitLock lock = held.get()) {
      initialise(missing, values, lock);
    }
    return true;
  }

  /** The pservers among {@code pservers} that answer and are not initialised. */
  private List<Integer> uninitialised(List<Integer> pservers) {
    List<Integer> out = new ArrayList<>();
    for (int ps : pservers) {
      if (!status(ps).getInitialised()) {
        out.add(ps);
      }
    }
    return out;
  }

  private ShardStatus status(int ps) {
    String what = "asking pserver " + ps + " for its status";
    return calls
        .retry()
        .until(
            what,
            attempt -> {
              ParameterServerGrpc.ParameterServerFutureStub stub = stub(ps);
              if (stub == null) {
                directory.invalidate(ps);
                return Optional.empty();
              }
              try {
                return Optional.of(
                    stub.getShardStatus(GetShardStatusRequest.getDefaultInstance()).get());
              } catch (ExecutionException e) {
                if (!RpcErrors.isTransient(e.getCause())) {
                  throw new IllegalStateException(
                      "pserver " + ps + " failed to report its status", e.getCause());
                }
                log.warn(
                    "pserver {} is unreachable ({}); retrying", ps, RpcErrors.codeOf(e.getCause()));
                directory.invalidate(ps);
                return Optional.empty();
              }
            });
  }

  private ParameterServerGrpc.ParameterServerFutureStub stub(int ps) {
    ParameterServerGrpc.ParameterServerFutureStub s = directory.stub(ps);
    return s == null
        ? null
        : s.withDeadlineAfter(calls.timeout().toMillis(), TimeUnit.MILLISECONDS);
  }

  private void initialise(List<Integer> pservers, Parameters values, JobLocks.InitLock lock) {
    if (pservers.isEmpty()) {
      return;
    }
    String initId = lock.previousInitId().orElse(UUID.randomUUID().toString());
    // one map for every pserver of this round: blocks and rows are each sent to one owner
    Routing routing = planner.layout().routing();
    for (int ps : pservers) {
      if (!routing.ownsAnything(ps)) {
        continue;
      }
      List<InitParametersRequest> requests = planner.inits(routing, ps, values, initId);
      log.info(
          "initialising pserver {} ({}) with {} blocks, {} bytes, init {}, {}",
          ps,
          directory.address(ps),
          routing.blocksOf(ps).size(),
          routing.placement().bytesOf(ps),
          initId,
          routing);
      if (!initialiseOne(ps, requests, routing.blocksOf(ps).size(), initId)) {
        return;
      }
    }
    lock.done(initId);
  }

  /** Sends one pserver its blocks; false if it is unreachable (the caller tries again later). */
  private boolean initialiseOne(
      int ps, List<InitParametersRequest> requests, int blocks, String initId) {
    try {
      ParameterServerGrpc.ParameterServerFutureStub stub = directory.stub(ps);
      if (stub == null) {
        throw new IllegalStateException("pserver " + ps + " is not registered");
      }
      long deadline = calls.timeout().toMillis();
      for (InitParametersRequest req : requests) {
        stub.withDeadlineAfter(deadline, TimeUnit.MILLISECONDS).initParameters(req).get();
      }
      stub.withDeadlineAfter(deadline, TimeUnit.MILLISECONDS)
          .finishInit(
              FinishInitRequest.newBuilder()
                  .setTrainerId(planner.trainerId())
                  .setInitId(initId)
                  .setExpectedBlocks(blocks)
                  .build())
          .get();
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException("initialising pserver " + ps);
    } catch (ExecutionException | RuntimeException e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      if (cause instanceof StatusRuntimeException && RpcErrors.isTransient(cause)) {
        log.warn("initialising pserver {} failed ({}); will retry", ps, RpcErrors.codeOf(cause));
        directory.invalidate(ps);
        return false;
      }
      throw new IllegalStateException(
          "initialising pserver " + ps + " failed: " + cause.getMessage(), cause);
    }
  }
}
