package dev.paramserver.master.metrics;

import dev.paramserver.master.election.MasterElection;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.PassStatus;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.IntSupplier;
import java.util.function.ToDoubleFunction;

/**
 * The master's domain metrics (all 0 on a standby):
 *
 * <ul>
 *   <li>{@code paramserver_master_leader}: 1 while this master leads, else 0
 *   <li>{@code paramserver_master_tasks{state=todo|pending|done|failed}}: tasks of the current pass
 *   <li>{@code paramserver_master_pass}: the pass running (equals the passes once finished)
 *   <li>{@code paramserver_master_pass_records}: records trained in the current pass
 *   <li>{@code paramserver_master_pass_duplicates}: tasks finished more than once in the pass
 *   <li>{@code paramserver_master_pass_timeouts}: timed-out dispatches in the pass
 *   <li>{@code paramserver_master_snapshot_bytes}: size of the last state snapshot saved to etcd
 *   <li>{@code paramserver_master_state_commits_total}: etcd transactions that saved the task
 *       queue's changes (grouped: several concurrent changes per transaction)
 *   <li>{@code paramserver_master_state_changes_total}: changes of the task queue those
 *       transactions saved
 *   <li>{@code paramserver_master_coordinated_trainers}: trainers attending through this master
 *       (the Coordination service holds their membership in etcd for them)
 * </ul>
 */
public final class MasterMetrics implements MeterBinder {
  private static final long CACHE_NANOS = 500_000_000L;
  private final MasterElection election;
  private final MasterJob job;
  private final IntSupplier coordinatedTrainers;
  private JobStatus cached;
  private long cachedAt;

  public MasterMetrics(MasterElection election, MasterJob job) {
    this(election, job, () -> 0);
  }

  /**
   * @param coordinatedTrainers the trainers attending through this master (Coordination service)
   */
  public MasterMetrics(MasterElection election, MasterJob job, IntSupplier coordinatedTrainers) {
    this.election = election;
    this.job = job;
    this.coordinatedTrainers = coordinatedTrainers;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    Gauge.builder("paramserver.master.leader", election, e -> e.isLeader() ? 1 : 0)
        .description("1 while this master leads, else 0")
        .register(registry);
    for (String state : new String[] {"todo", "pending", "done", "failed"}) {
      gauge(
              registry,
              "paramserver.master.tasks",
              "tasks of the current pass in this state",
              s ->
                  switch (state) {
                    case "todo" -> s.getTasks().getTodo();
                    case "pending" -> s.getTasks().getPending();
                    case "done" -> s.getTasks().getDone();
                    default -> s.getTasks().getFailed();
                  })
          .tag("state", state)
          .register(registry);
    }
    gauge(registry, "paramserver.master.pass", "the pass running", JobStatus::getPass)
        .register(registry);
    gauge(
            registry,
            "paramserver.master.pass.records",
            "records trained in the current pass",
            s -> current(s).getRecords())
        .register(registry);
    gauge(
            registry,
            "paramserver.master.pass.duplicates",
            "tasks finished more than once in the current pass",
            s -> current(s).getDuplicates())
        .register(registry);
    gauge(
            registry,
            "paramserver.master.pass.timeouts",
            "timed-out dispatches in the current pass",
            s -> current(s).getTimeouts())
        .register(registry);
    Gauge.builder("paramserver.master.snapshot.bytes", job, MasterJob::lastSnapshotBytes)
        .description("compressed size of the last state snapshot saved to etcd")
        .baseUnit("bytes")
        .register(registry);
    FunctionCounter.builder("paramserver.master.state.commits", job, MasterJob::queueCommits)
        .description("etcd transactions that saved the task queue's changes")
        .register(registry);
    FunctionCounter.builder(
            "paramserver.master.state.changes", job, MasterJob::queueChangesCommitted)
        .description("changes of the task queue saved by those transactions")
        .register(registry);
    Gauge.builder(
            "paramserver.master.coordinated.trainers", coordinatedTrainers, IntSupplier::getAsInt)
        .description("trainers whose membership this master holds (they attend through it)")
        .register(registry);
  }

  private Gauge.Builder<MasterMetrics> gauge(
      MeterRegistry registry, String name, String description, ToDoubleFunction<JobStatus> f) {
    return Gauge.builder(name, this, m -> m.status() == null ? 0 : f.applyAsDouble(m.status()))
        .description(description);
  }

  private static PassStatus current(JobStatus s) {
    return s.getPassesCount() == 0
        ? PassStatus.getDefaultInstance()
        : s.getPasses(Math.min(s.getPass(), s.getPassesCount() - 1));
  }

  private synchronized JobStatus status() {
    long now = System.nanoTime();
    if (cached == null || now - cachedAt > CACHE_NANOS) {
      cached = job.statusIfServing().orElse(null);
      cachedAt = now;
    }
    return cached;
  }
}
