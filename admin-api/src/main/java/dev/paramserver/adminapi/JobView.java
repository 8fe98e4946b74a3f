package dev.paramserver.adminapi;

import com.fasterxml.jackson.annotation.JsonClassDescription;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.annotation.JsonSerialize;

/**
 * The leader master's answer to {@code GET /admin/job}: the whole job as the console shows it.
 * Written by the master, read by psctl, the console's page and the run tracker; its JSON Schema is
 * {@link JobViewSchema#RESOURCE} (served at {@code GET /admin/job/schema}). Every field is always
 * there, {@code null} where {@link Nullable}; before the master's first sample only {@code leader},
 * {@code job} (an empty object) and {@code events} are.
 *
 * <p>The records mirror the JSON: the component names are the field names, in their order.
 */
@JsonClassDescription(
    "The leader master's answer to GET /admin/job: the whole job as the console shows it. Before"
        + " the master's first sample only leader, job (an empty object) and events are there.")
public record JobView(
    @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonPropertyDescription("when the last sample was taken (ms since the epoch)")
        Long time,
    @JsonPropertyDescription("true (a standby answers 409 instead)") boolean leader,
    @JsonSerialize(nullsUsing = EmptyObjectWhenNull.class)
        @JsonPropertyDescription("the job's state and progress ({} before the first sample)")
        Job job,
    @JsonInclude(JsonInclude.Include.NON_NULL) @JsonPropertyDescription("every pass so far")
        List<Pass> passes,
    @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonPropertyDescription(
            "the curves over time, column by column (the last"
                + " paramserver.master.console.history samples)")
        Series series,
    @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonPropertyDescription("every registered pserver, and the lost ones")
        List<Pserver> pservers,
    @JsonInclude(JsonInclude.Include.NON_NULL) @JsonPropertyDescription("every registered trainer")
        List<Trainer> trainers,
    @JsonPropertyDescription("the last paramserver.master.console.events events, oldest first")
        List<Event> events,
    @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonPropertyDescription(
            "the job's pserver count and its elastic placement (docs/explanation/elastic.md):"
                + " the committed epoch, the move under way and the last moves")
        Scaling scaling,
    @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonPropertyDescription(
            "the earlier passes left out of passes when GET /admin/job?passes=N asked for the"
                + " latest N (absent without the parameter: passes then holds every pass)")
        Integer passesOmitted,
    @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonPropertyDescription(
            "every registered serving replica (etcd serving/<id>), by address"
                + " (docs/explanation/serving.md)")
        List<Serving> serving) {

  /** The view before the first sample: only the events. */
  public static JobView unsampled(List<Event> events) {
    return new JobView(null, true, null, null, null, null, null, events, null, null, null);
  }

  /** A view without serving replicas. */
  public JobView(
      Long time,
      boolean leader,
      Job job,
      List<Pass> passes,
      Series series,
      List<Pserver> pservers,
      List<Trainer> trainers,
      List<Event> events,
      Scaling scaling,
      Integer passesOmitted) {
    this(
        time,
        leader,
        job,
        passes,
        series,
        pservers,
        trainers,
        events,
        scaling,
        passesOmitted,
        null);
  }

  /** A view of every pass (no {@code passesOmitted}). */
  public JobView(
      Long time,
      boolean leader,
      Job job,
      List<Pass> passes,
      Series series,
      List<Pserver> pservers,
      List<Trainer> trainers,
      List<Event> events,
      Scaling scaling) {
    this(time, leader, job, passes, series, pservers, trainers, events, scaling, null);
  }

  /** A view without {@code scaling} (a master that does not sample the placement). */
  public JobView(
      Long time,
      boolean leader,
      Job job,
      List<Pass> passes,
      Series series,
      List<Pserver> pservers,
      List<Trainer> trainers,
      List<Event> events) {
    this(time, leader, job, passes, series, pservers, trainers, events, null);
  }

  public JobView {
    // an empty job object (before the first sample) reads back as none
    job = job == null || job.state() == null ? null : job;
    events = events == null ? List.of() : events;
  }

  /** This view with {@code events} instead of its own. */
  public JobView withEvents(List<Event> events) {
    return new JobView(
        time,
        leader,
        job,
        passes,
        series,
        pservers,
        trainers,
        events,
        scaling,
        passesOmitted,
        serving);
  }

  /**
   * This view with only its latest {@code n} passes and, in {@code passesOmitted}, how many earlier
   * ones it leaves out ({@code GET /admin/job?passes=N}), so that the answer's size does not grow
   * with the job's length. A view before the first sample (no passes) is returned as it is.
   */
  public JobView withLatestPasses(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("passes must be 0 or more, got " + n);
    }
    if (passes == null) {
      return this;
    }
    int omitted = Math.max(0, passes.size() - n) + (passesOmitted == null ? 0 : passesOmitted);
    List<Pass> latest = List.copyOf(passes.subList(Math.max(0, passes.size() - n), passes.size()));
    return new JobView(
        time, leader, job, latest, series, pservers, trainers, events, scaling, omitted, serving);
  }

  /** Whether the master has sampled the job yet (before that, only the events are there). */
  @JsonIgnore
  public boolean sampled() {
    return job != null;
  }

  /** The job's state and progress. */
  public record Job(
      @JsonPropertyDescription(
              "WAITING_FOR_DATASET, RUNNING, FINISHED or FAILED (failureReason says why)")
          String state,
      @JsonPropertyDescription("why the job failed (\"\" unless FAILED)") String failureReason,
      @JsonPropertyDescription("the leader's gRPC address") String masterId,
      @JsonPropertyDescription("the leader's HTTP address") String adminAddress,
      @JsonPropertyDescription("the pass running now (0-based; equals totalPasses once finished)")
          int pass,
      @JsonPropertyDescription("passes the job makes") int totalPasses,
      @JsonPropertyDescription("the tasks of the current pass, per state") Tasks tasks,
      @JsonPropertyDescription("tasks of the dataset (of one pass)") int datasetTasks,
      @JsonPropertyDescription("records of the dataset") long datasetRecords,
      @JsonPropertyDescription("when the first pass started (ms since the epoch; null: not yet)")
          @Nullable
          Long startedMs,
      @JsonPropertyDescription("time since the first pass started (until the job ended)")
          double elapsedSeconds,
      @JsonPropertyDescription("fraction done: (finished passes + done tasks / tasks) / passes")
          double progress,
      @JsonPropertyDescription("elapsed * (1 - progress) / progress while running, else null")
          @Nullable
          Double etaSeconds,
      @JsonPropertyDescription("records of finished tasks per second over the last sample interval")
          double recordsPerSecond,
      @JsonPropertyDescription("sum of the trainers' samples per second") double samplesPerSecond) {

    /** Whether the job ended (finished or failed). Not a field of the answer. */
    @JsonIgnore
    public boolean isOver() {
      return "FINISHED".equals(state) || "FAILED".equals(state);
    }
  }

  /** Tasks per state. */
  public record Tasks(
      @JsonPropertyDescription("waiting to be handed out") int todo,
      @JsonPropertyDescription("handed out, not done yet") int pending,
      @JsonPropertyDescription("done") int done,
      @JsonPropertyDescription("failed too often: given up") int failed) {}

  /** One pass. */
  public record Pass(
      @JsonPropertyDescription("the pass, 0-based") int pass,
      @JsonPropertyDescription("when it started (ms since the epoch)") long startedMs,
      @JsonPropertyDescription("when it ended (ms since the epoch; null while running)") @Nullable
          Long endedMs,
      @JsonPropertyDescription("records of its finished tasks") long records,
      @JsonPropertyDescription("tasks finished twice (the second report is ignored)")
          int duplicates,
      @JsonPropertyDescription("tasks handed out again after their timeout") int timeouts,
      @JsonPropertyDescription(
              "mean of the trainers' training loss sampled during the pass (null: none)")
          @Nullable
          Double trainLoss,
      @JsonPropertyDescription(
              "mean of the trainers' test loss at the end of the pass (null until reported)")
          @Nullable
          Double testLoss,
      @JsonPropertyDescription(
              "mean of the trainers' test accuracy at the end of the pass (null until"
                  + " reported)")
          @Nullable
          Double accuracy,
      @JsonPropertyDescription(
              "mean of the trainers' test AUC at the end of the pass (binary models only; null"
                  + " until reported)")
          @Nullable
          Double auc) {}

  /** The curves over time, column by column (the shape charting libraries take). */
  public record Series(
      @JsonPropertyDescription("seconds since the epoch") List<Double> time,
      @JsonPropertyDescription("the job's pass (0-based)") List<Integer> pass,
      @JsonPropertyDescription("the job's records per second") List<Double> recordsPerSecond,
      @JsonPropertyDescription("the job's samples per second") List<Double> samplesPerSecond,
      @JsonPropertyDescription("mean training loss of the trainers (null: none reported)")
          List<@Nullable Double> trainLoss) {}

  /** One pserver. */
  public record Pserver(
      @JsonPropertyDescription("its index (etcd key ps/<index>)") int index,
      @JsonPropertyDescription("its gRPC address") String address,
      @JsonPropertyDescription("its HTTP address (\"\" when unknown)") String adminAddress,
      @JsonPropertyDescription(
              "SERVING, UNINITIALISED, REGISTERING, DRAINING; UNREACHABLE when registered but"
                  + " not answering; LOST once its registration is gone, until it registers"
                  + " again")
          String state,
      @JsonPropertyDescription("updates applied") long step,
      @JsonPropertyDescription("bytes of parameter values held") long parameterBytes,
      @JsonPropertyDescription("rows per sparse table") Map<String, Long> sparseRows,
      @JsonPropertyDescription("pushes per second over the last sample interval")
          double pushesPerSecond,
      @JsonPropertyDescription("pulls per second over the last sample interval")
          double pullsPerSecond,
      @JsonPropertyDescription(
              "99th percentile of its last 1024 pushes' apply times (null: none yet)")
          @Nullable
          Double applyP99Ms,
      @JsonPropertyDescription("age of its newest checkpoint (null: none yet)") @Nullable
          Double checkpointAgeSeconds,
      @JsonPropertyDescription(
              "its replica role (always null for now: the console does not read it yet)")
          @Nullable
          String replica,
      @JsonPropertyDescription("push rate above twice the median of the other pservers")
          boolean hot,
      @JsonPropertyDescription("its status could not be read") boolean down,
      @JsonPropertyDescription("why its status could not be read (\"\" when it could)")
          String error) {}

  /** One trainer. */
  public record Trainer(
      @JsonPropertyDescription("its id (etcd key trainers/<id>)") String id,
      @JsonPropertyDescription("its HTTP address (host:0: none)") String adminAddress,
      @JsonPropertyDescription(
              "TRAINING, ... or UNREACHABLE; JOINED_VIA_MASTER when it joined through the master with no admin endpoint")
          String state,
      @JsonPropertyDescription("the pass it works on (0-based; -1: unknown)") int pass,
      @JsonPropertyDescription("the task it holds (null: none)") @Nullable Long task,
      @JsonPropertyDescription("samples trained so far") long samples,
      @JsonPropertyDescription(
              "tasks it trained and reported finished (null: unknown, as for a trainer without"
                  + " an admin endpoint)")
          @Nullable
          Long tasksDone,
      @JsonPropertyDescription(
              "from its sample counter between two looks, smoothed (a stuck trainer shows 0)")
          double samplesPerSecond,
      @JsonPropertyDescription("its recent training loss (null: none yet)") @Nullable Double loss,
      @JsonPropertyDescription("when its status last answered (ms since the epoch; null: never)")
          @Nullable
          Long lastReport,
      @JsonPropertyDescription("seconds since lastReport (null: never)") @Nullable
          Double lagSeconds,
      @JsonPropertyDescription("passes behind the job (null: its pass is unknown)") @Nullable
          Integer passLag,
      @JsonPropertyDescription("samples per second below half the median of the other trainers")
          boolean straggler,
      @JsonPropertyDescription("why its status could not be read (\"\" when it could)")
          String error) {}

  /** One event of the job. */
  public record Event(
      @JsonPropertyDescription("when (ms since the epoch)") long time,
      @JsonPropertyDescription(
              "leader, pass, job, pserver-restart, pserver-reinit, pserver-lost, trainer-joined,"
                  + " trainer-left, task-failed, task-timeout, checkpoint, job-stopped")
          String kind,
      @JsonPropertyDescription("a sentence for a person") String message) {}

  /** The job's pserver count and its elastic placement. */
  public record Scaling(
      @JsonPropertyDescription(
              "the committed placement epoch (0: never scaled, no placement map written yet)")
          long epoch,
      @JsonPropertyDescription(
              "pservers of the committed placement (null: no placement map yet, the job runs on"
                  + " its first desired count)")
          @Nullable
          Integer pservers,
      @JsonPropertyDescription("the pserver count asked for (etcd ps_desired; null: not set yet)")
          @Nullable
          Integer desired,
      @JsonPropertyDescription(
              "idle, moving, waiting for pserver N to register, waiting for the pservers to answer, draining pserver N, or failed")
          String phase,
      @JsonPropertyDescription("the move under way (null: none)") @Nullable Move move,
      @JsonPropertyDescription(
              "why the last move was rolled back or the scaling failed (null: it did not)")
          @Nullable
          String lastError,
      @JsonPropertyDescription("the last committed or rolled-back moves (at most 20), oldest first")
          List<Move> moves) {}

  /** One serving replica (docs/explanation/serving.md). */
  public record Serving(
      @JsonPropertyDescription("its replica id (etcd key serving/<id>; versions name it)")
          String id,
      @JsonPropertyDescription("its gRPC address") String address,
      @JsonPropertyDescription("its HTTP address (REST reads, /admin; \"\" when unknown)")
          String adminAddress,
      @JsonPropertyDescription("LOADING (some shard has no copy yet) or SERVING") String state,
      @JsonPropertyDescription(
              "FOLLOWING (the job's pservers), PINNED (a job-wide checkpoint) or MODEL_FILE")
          String source,
      @JsonPropertyDescription("the number of the version served (0 while LOADING)") long version,
      @JsonPropertyDescription(
              "each shard's sequence in the version served, by shard index (empty while LOADING)")
          List<Long> sequences,
      @JsonPropertyDescription(
              "updates behind the pservers: the sum over shards of the pserver's step minus the"
                  + " sequence served (null: some pserver's step is not known)")
          @Nullable
          Long behind,
      @JsonPropertyDescription(
              "the largest lag of a shard's change stream as the replica last measured it: from"
                  + " the primary applying an update to the replica serving it")
          long lagMs,
      @JsonPropertyDescription("shards whose change stream is open") int connected) {}

  /** One move of slots and dense blocks from a pserver to another. */
  public record Move(
      @JsonPropertyDescription("its id (in the logs too)") String id,
      @JsonPropertyDescription("the placement epoch it commits") long epoch,
      @JsonPropertyDescription("the pserver giving the slots") int from,
      @JsonPropertyDescription("the pserver taking them") int to,
      @JsonPropertyDescription("row slots moved") int slots,
      @JsonPropertyDescription("dense blocks moved") int blocks,
      @JsonPropertyDescription("committed, or rolled back: why (null while under way)") @Nullable
          String result,
      @JsonPropertyDescription("bytes sent, the copy and the records (null unless committed)")
          @Nullable
          Long bytes,
      @JsonPropertyDescription("update records sent after the copy (null unless committed)")
          @Nullable
          Long records,
      @JsonPropertyDescription("rows moved (null unless committed)") @Nullable Long rows,
      @JsonPropertyDescription(
              "from the cut to the new owner holding the copy (null unless committed)")
          @Nullable
          Long copyMs,
      @JsonPropertyDescription(
              "from the old owner refusing the slots to the new owner holding every record: the"
                  + " longest a push of them waited (null unless committed)")
          @Nullable
          Long stallMs,
      @JsonPropertyDescription("the whole move, as the master timed it (null unless committed)")
          @Nullable
          Long durationMs) {}
}
