package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.master.coordination.Attendance.Ending;
import dev.paramserver.master.coordination.JobModels.Agreed;
import dev.paramserver.proto.v1.AcquireLockRequest;
import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.AttendRequest;
import dev.paramserver.proto.v1.GetPlacementRequest;
import dev.paramserver.proto.v1.JobModel;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.JoinResponse;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.Placement;
import dev.paramserver.proto.v1.ReleaseLockRequest;
import dev.paramserver.proto.v1.TrainingMode;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The leader master's coordination of trainers that have no etcd client (the Coordination service's
 * domain): joins checked against the job's model, memberships held in etcd on the trainers' behalf,
 * the cluster map, the block placement and the job's locks. Only the leader serves; when this
 * master stops leading (or stops) every membership ends and its stream is told to reconnect. One
 * thread checks heartbeats and leadership every {@link #tickMillis()} and revokes the leases of
 * ended attendances.
 */
public final class CoordinatedTrainers implements SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(CoordinatedTrainers.class);

  private final Coordinator coordinator;
  private final LeaderCheck leader;
  private final Duration ttl;
  private final int phase;
  private final ScheduledExecutorService executor;
  private final JobModels models;
  private final JoinedTrainers trainers;
  private final ClusterMapFeed feed;
  private final Attendances attendances;
  private final LockGrants locks;
  private volatile boolean running;
  private volatile boolean closing;
  private boolean wasLeader;

  /**
   * @param ttl the trainers' lease TTL: a membership ends this long after the last heartbeat
   * @param phase the lifecycle phase (stopped before the election resigns)
   */
  public CoordinatedTrainers(Coordinator coordinator, LeaderCheck leader, Duration ttl, int phase) {
    this.coordinator = coordinator;
    this.leader = leader;
    this.ttl = ttl;
    this.phase = phase;
    this.executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "master-coordination");
              t.setDaemon(true);
              return t;
            });
    this.models = new JobModels(coordinator.kv(), coordinator.keys().model());
    this.trainers = new JoinedTrainers(coordinator.kv(), coordinator.keys());
    this.feed = new ClusterMapFeed(coordinator.kv(), coordinator.keys(), executor);
    this.attendances = new Attendances(coordinator, trainers, feed, ttl, executor);
    this.locks = new LockGrants(coordinator.kv(), coordinator.keys());
  }

  /**
   * Joins a trainer; {@code peerHost} names it in {@code trainers/<id>} when it has no endpoint.
   */
  public JoinResponse join(JoinRequest req, String peerHost) {
    requireServing();
    String id = trainers.resolveId(req.getTrainerId(), req.getSession());
    String endpoint = TrainerEndpoints.registration(req.getEndpoint(), peerHost);
    Agreed agreed;
    if (req.getParametersCount() == 0) {
      agreed = new Agreed(models.require(), false); // the job's mode and staleness too
    } else {
      agreed =
          models.agree(
              JobModel.newBuilder()
                  .addAllParameters(req.getParametersList())
                  .setMode(req.getMode())
                  // a staleness bound means nothing outside BOUNDED_STALENESS: not part of the
                  // model there, so a trainer's default for it never refuses another's join
                  .setStaleness(
                      req.getMode() == TrainingMode.BOUNDED_STALENESS ? req.getStaleness() : 0)
                  .build());
    }
    if (req.hasModelDescription()) {
      describe(req.getModelDescription());
    }
    trainers.record(id, req.getSession(), endpoint, req.getClient());
    JobModel model = agreed.model();
    return JoinResponse.newBuilder()
        .setTrainerId(id)
        .addAllParameters(model.getParametersList())
        .setMode(model.getMode())
        .setStaleness(model.getStaleness())
        .setLeaseTtlMs((int) ttl.toMillis())
        .setHeartbeatMs((int) (ttl.toMillis() / 3))
        .setJob(coordinator.keys().job())
        .setDefinedModel(agreed.defined())
        .build();
  }

  /**
   * Records how the job's model predicts ({@code model/description}, with the job's name) unless a
   * trainer recorded it before: the description never changes for a job.
   */
  private void describe(ModelFile description) {
    String key = coordinator.keys().modelDescription();
    ModelFile named = description.toBuilder().setJob(coordinator.keys().job()).build();
    if (coordinator.kv().compareAndSwap(key, 0, named.toByteArray())) {
      log.info("recorded the job's model description ({}) at {}", named.getModel(), key);
    }
  }

  /** Starts the membership named by an Attend stream's first message. */
  public Attendance attend(AttendRequest first, AttendSink sink) {
    requireServing();
    if (first.getTrainerId().isEmpty() || first.getSession().isEmpty()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "the first Attend message must name trainer_id and session, as joined");
    }
    return attendances.attend(first.getTrainerId(), first.getSession(), sink);
  }

  /** The trainer ended its stream: on purpose ({@code leftOnPurpose}) or not. */
  public void left(Attendance m, boolean leftOnPurpose) {
    attendances.end(m, leftOnPurpose ? Ending.LEFT : Ending.GONE, null);
  }

  public Placement placement(GetPlacementRequest req) {
    requireServing();
    JobModel model = models.require();
    int pservers = req.getPservers();
    if (pservers == 0) {
      pservers = feed.read().getPserversDesired();
      if (pservers == 0) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            "the job's ps_desired is not set yet (no pserver started): ask again once the cluster"
                + " map shows pservers_desired > 0, or name the pserver count");
      }
    }
    return Placements.of(model, pservers);
  }

  public AcquireLockResponse acquire(AcquireLockRequest req) {
    requireServing();
    return locks.acquire(
        attendances.require(req.getTrainerId()),
        req.getLock(),
        req.getPass(),
        req.getReinitialise());
  }

  public void release(ReleaseLockRequest req) {
    requireServing();
    locks.release(
        attendances.require(req.getTrainerId()), req.getLock(), req.getPass(), req.getDone());
  }

  /** How many trainers attend through this master now. */
  public int coordinatedTrainers() {
    return attendances.size();
  }

  /** The lease TTL given to trainers. */
  public Duration leaseTtl() {
    return ttl;
  }

  /**
   * Ends every membership and refuses new calls: called when the master begins to shut down, before
   * the gRPC server drains, so open Attend streams do not hold the drain up.
   */
  public void shutdown() {
    closing = true;
    attendances.endAll(leader.notLeader("this master is shutting down"));
  }

  private void requireServing() {
    if (closing) {
      throw leader.notLeader("this master is shutting down");
    }
    leader.require();
  }

  private void tick() {
    try {
      if (closing || !leader.isLeader()) {
        if (attendances.size() > 0) {
          attendances.endAll(leader.notLeader("this master stopped leading"));
        }
        if (wasLeader) {
          trainers.clear();
          models.forget();
          wasLeader = false;
        }
        return;
      }
      wasLeader = true;
      attendances.expireSilent();
    } catch (RuntimeException e) {
      log.warn("checking the trainers' memberships failed: {}", e.toString());
    }
  }

  long tickMillis() {
    return Math.max(20, Math.min(200, ttl.toMillis() / 10));
  }

  @Override
  public void start() {
    if (running) {
      return;
    }
    running = true;
    executor.scheduleWithFixedDelay(this::tick, tickMillis(), tickMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void stop() {
    if (!running) {
      return;
    }
    running = false;
    shutdown();
    feed.close();
    executor.shutdown(); // lets the queued revocations run
    try {
      if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      executor.shutdownNow();
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return phase;
  }
}
