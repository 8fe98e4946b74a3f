package dev.paramserver.master.console;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.master.placement.PlacementCoordinator;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.master.tracking.LossSeries;
import dev.paramserver.master.tracking.RunTracker;
import dev.paramserver.master.tracking.TrackingFiles;
import dev.paramserver.proto.v1.JobStatus;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import tools.jackson.databind.JsonNode;

/**
 * What the leader knows of the whole job, for {@code /admin/job}, the console and {@code psctl}:
 * samples the job's status, the pservers and the trainers every {@code
 * paramserver.master.console.sample-interval} while this master leads (a standby samples nothing)
 * into a {@link ConsoleModel}, collects the events, and carries out the operator's actions
 * (checkpoint every pserver now; stop the job). Ended passes, the training loss's points (from the
 * {@link LossSeries} the job's accepted task reports feed) and the hyperparameters go to the {@link
 * RunTracker}.
 */
public final class JobConsole implements SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(JobConsole.class);
  private static final Duration CHECKPOINT_TIMEOUT = Duration.ofMinutes(2);
  // fresh samples a checkpoint takes at most to find the registered pservers' admin addresses, a
  // pause apart (a pserver that registered a moment ago answers its status calls shortly after)
  private static final int TARGET_SAMPLES = 4;
  private static final long TARGET_SAMPLE_PAUSE_MS = 1000;

  private final MasterJob job;
  private final MasterElection election;
  private final ClusterProbe probe;
  private final Duration interval;
  private final Clock clock;
  private final JobEvents events;
  private final ConsoleModel model;
  private final int phase;
  private final RunTracker tracker;
  private final LossSeries loss;
  private final PlacementCoordinator placement;
  private JobView.Scaling scaling;
  private volatile Map<Integer, String> pserverAdmin = Map.of();
  private volatile boolean leading;
  private String lastFailure = "";
  private ScheduledExecutorService sampler;

  JobConsole(
      MasterJob job,
      MasterElection election,
      ClusterProbe probe,
      Duration interval,
      int history,
      int eventCapacity,
      Clock clock,
      int phase,
      RunTracker tracker,
      LossSeries loss,
      PlacementCoordinator placement) {
    this.placement = placement;
    this.tracker = tracker;
    this.loss = loss;
    this.job = job;
    this.election = election;
    this.probe = probe;
    this.interval = interval;
    this.clock = clock;
    this.phase = phase;
    this.events = new JobEvents(eventCapacity);
    this.model = new ConsoleModel(history, events);
    job.setEventListener((kind, message) -> events.add(clock.millis(), kind, message));
    if (tracker.enabled()) {
      job.setLossTracking(loss.every(), loss::add, loss::rebase);
    }
  }

  /**
   * The console of {@code job}, sampling with {@code settings}; it reaches the pservers and the
   * trainers through etcd, gRPC (for a pserver's HTTP address) and their admin endpoints with
   * {@code adminToken}; it tracks the run into {@code tracking}, with a point of training loss
   * about every {@code lossEveryRecords} records; the view's {@code scaling} is {@code placement}'s
   * (null: the view has none).
   */
  public static JobConsole create(
      MasterJob job,
      MasterElection election,
      Coordinator coordinator,
      PserverStatuses statuses,
      String adminToken,
      MasterProperties.Console settings,
      TrackingFiles tracking,
      long lossEveryRecords,
      String host,
      int phase,
      PlacementCoordinator placement) {
    AdminClient admin =
        AdminClient.create("the service", "http://127.0.0.1", adminToken, settings.callTimeout());
    ClusterProbe probe = new ClusterProbe(coordinator, statuses, admin, settings.callTimeout());
    return new JobConsole(
        job,
        election,
        probe,
        settings.sampleInterval(),
        settings.history(),
        settings.events(),
        Clock.systemUTC(),
        phase,
        new RunTracker(tracking.metricsFile(), tracking.tensorboardDir(), host),
        new LossSeries(lossEveryRecords),
        placement);
  }

  /** The job as {@code GET /admin/job} shows it (docs/console.md). */
  public JobView view() {
    return model.view();
  }

  /** One sample (the sampler calls it; tests may too). */
  void sample() {
    Optional<JobStatus> status = job.statusIfServing();
    if (status.isEmpty() || !election.isLeader()) {
      if (leading) {
        events.add(
            clock.millis(), "leader", "this master (" + job.identity() + ") stopped leading");
      }
      leading = false;
      return;
    }
    if (!leading) {
      leading = true;
      events.add(clock.millis(), "leader", "master " + job.identity() + " leads the job");
    }
    try {
      List<PserverSample> pservers = probe.pservers();
      List<TrainerSample> trainers = probe.trainers();
      Map<Integer, String> admin = new LinkedHashMap<>();
      pservers.stream()
          .filter(p -> !p.adminAddress().isEmpty())
          .forEach(p -> admin.put(p.index(), p.adminAddress()));
      pserverAdmin = admin;
      // the job's status after the slow calls, so it is never older than what they found
      long now = clock.millis();
      // none registered: left out of the view, as a master that predates serving replicas does
      List<JobView.Serving> serving = ServingSample.of(probe.serving(), pservers);
      model.update(
          now,
          job.statusIfServing().orElse(status.get()),
          pservers,
          trainers,
          scaling(),
          serving.isEmpty() ? null : serving);
      JobView view = model.view();
      tracker.onLoss(loss.drain(), now);
      tracker.onView(view, pservers.stream().mapToLong(PserverSample::step).sum(), now);
      tracker.onHyperparameters(job.hyperparameters(), view, now);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      // once per kind of failure, not once a second
      String what = e.getClass().getName() + ": " + e.getMessage();
      if (!what.equals(lastFailure)) {
        lastFailure = what;
        log.warn("the console could not sample the job: {}", what, e);
      }
    }
  }

  /** The placement as the coordinator has it now (null without a coordinator). */
  private JobView.Scaling scaling() {
    if (placement == null) {
      return null;
    }
    scaling = ScalingSample.of(placement.view(), scaling);
    return scaling;
  }

  /**
   * Asks every pserver to checkpoint now; answers per pserver {@code {index, ok, step | error}}.
   */
  public List<PserverCheckpoint> checkpointNow() {
    Map<Integer, String> targets = checkpointTargets();
    Map<Integer, CompletableFuture<JsonNode>> calls = new LinkedHashMap<>();
    targets.forEach(
        (i, a) -> calls.put(i, probe.admin(a).postAsync("/admin/checkpoint", CHECKPOINT_TIMEOUT)));
    List<PserverCheckpoint> out = new ArrayList<>();
    for (Map.Entry<Integer, CompletableFuture<JsonNode>> e : calls.entrySet()) {
      int index = e.getKey();
      try {
        JsonNode meta = e.getValue().get(CHECKPOINT_TIMEOUT.toSeconds() + 5, TimeUnit.SECONDS);
        out.add(PserverCheckpoint.written(index, meta.path("step").asLong()));
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        out.add(PserverCheckpoint.failed(index, "interrupted"));
      } catch (Exception ex) {
        Throwable c = ex.getCause() != null ? ex.getCause() : ex;
        out.add(PserverCheckpoint.failed(index, String.valueOf(c.getMessage())));
      }
    }
    long ok = out.stream().filter(PserverCheckpoint::ok).count();
    events.add(
        clock.millis(),
        "checkpoint",
        "checkpoint requested by the operator: "
            + ok
            + " of "
            + out.size()
            + " pservers wrote one");
    return out;
  }

  /**
   * The admin addresses of the pservers as the last sample found them; when it missed one that is
   * registered (its status call failed or timed out on a loaded machine, or it registered since),
   * as fresh samples find them (up to {@link #TARGET_SAMPLES}, taken on the sampler's thread).
   */
  private Map<Integer, String> checkpointTargets() {
    Map<Integer, String> targets = pserverAdmin;
    ScheduledExecutorService s;
    synchronized (this) {
      s = sampler;
    }
    Set<Integer> registered;
    try {
      registered = probe.registeredPservers();
    } catch (RuntimeException e) {
      return targets; // etcd does not answer: the last sample's
    }
    // a loaded machine may miss a pserver's status call again: a few samples, within the timeout
    long deadline = System.nanoTime() + CHECKPOINT_TIMEOUT.toNanos();
    for (int attempt = 0;
        s != null && attempt < TARGET_SAMPLES && !targets.keySet().containsAll(registered);
        attempt++) {
      try {
        if (attempt > 0) {
          Thread.sleep(TARGET_SAMPLE_PAUSE_MS);
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        s.submit(this::sample).get(left, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      } catch (ExecutionException | TimeoutException | RejectedExecutionException e) {
        log.warn("the console could not sample the pservers before a checkpoint: {}", e.toString());
        break;
      }
      targets = pserverAdmin;
    }
    return targets;
  }

  /**
   * Stops the job gracefully: every pserver checkpoints, then the job ends (FAILED, with the reason
   * "stopped by the operator") so the trainers stop at their next call.
   */
  public JobStop stopJob() {
    List<PserverCheckpoint> checkpoints = checkpointNow();
    boolean stopped = false;
    String message;
    try {
      stopped = job.stop("stopped by the operator (POST /admin/job/stop)");
      message = stopped ? "the job was stopped" : "the job had already ended";
    } catch (ServiceException e) {
      message = "the job was not stopped: " + e.getMessage();
    }
    return new JobStop(stopped, message, checkpoints);
  }

  /** Whether this master leads (and so serves the job). */
  public boolean isLeader() {
    return election.isLeader() && job.isServing();
  }

  public MasterElection election() {
    return election;
  }

  @Override
  public synchronized void start() {
    if (sampler != null) {
      return;
    }
    sampler =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "job-console");
              t.setDaemon(true);
              return t;
            });
    sampler.scheduleWithFixedDelay(
        this::sample, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public synchronized void stop() {
    if (sampler != null) {
      sampler.shutdownNow();
      sampler = null;
    }
    probe.close();
    tracker.onLoss(loss.drain(), clock.millis()); // the points made since the last sample
    tracker.close();
  }

  @Override
  public synchronized boolean isRunning() {
    return sampler != null;
  }

  @Override
  public int getPhase() {
    return phase;
  }
}
