package dev.paramserver.master.config;

import jakarta.validation.Valid;
import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * The master's settings, under {@code paramserver.master}.
 *
 * @param passes how many passes (epochs) over the dataset the job runs; at least 1
 * @param chunksPerTask how many consecutive RecordIO chunks make one task; at least 1
 * @param taskTimeout how long a trainer may hold a task before it is taken back and handed to
 *     another trainer (counted as a failure of the task); used as is unless the adaptive timeout is
 *     enabled
 * @param maxFailures how many times a task may fail or time out within one pass before it is moved
 *     to the failed queue for the rest of that pass; at least 1
 * @param timeoutCheckInterval how often the master looks for pending tasks past their deadline
 * @param waitRetry the {@code retry_after_ms} hint sent with WAIT and PASS_NOT_STARTED answers, and
 *     the longest GetTask holds a WAIT answer for a trainer that asks for it ({@code hold_ms}) and
 *     holds no task, answering as soon as a task is free or the pass ends
 * @param adaptiveTimeout optional timeout derived from the recent task durations
 * @param advertisePort the port published in {@code master/addr} for trainers to dial, when they
 *     reach the master through a proxy or a port mapping; 0 (default) publishes the gRPC server's
 *     own port
 * @param console the web console's and {@code /admin/job}'s sampling
 * @param tracking run tracking: where the metrics, the hyperparameters and the TensorBoard event
 *     file are written, and how often the training loss is recorded
 * @param taskRecords about how many records a task holds: consecutive chunks are grouped into tasks
 *     of about this many records (never fewer chunks than {@code chunks-per-task}, and never so
 *     many that a pass has fewer than 32 tasks); 0 keeps {@code chunks-per-task} as it is
 * @param minTrainers how many trainers must be registered ({@code trainers/<id>} in etcd) before
 *     the job hands out its first task: until then GetTask answers WAIT, naming the count. Only the
 *     start waits: once a task went out the job goes on with whoever is there. 0 (default) starts
 *     with the first trainer that asks
 */
@Validated
@ConfigurationProperties("paramserver.master")
public record MasterProperties(
    @DefaultValue("1") @Min(1) int passes,
    @DefaultValue("1") @Min(1) int chunksPerTask,
    @DefaultValue("60s") @NotNull Duration taskTimeout,
    @DefaultValue("3") @Min(1) int maxFailures,
    @DefaultValue("1s") @NotNull Duration timeoutCheckInterval,
    @DefaultValue("200ms") @NotNull Duration waitRetry,
    @DefaultValue @Valid @NotNull AdaptiveTimeout adaptiveTimeout,
    @DefaultValue("0") @Min(0) @Max(65535) int advertisePort,
    @DefaultValue @Valid @NotNull Console console,
    @DefaultValue @Valid @NotNull Tracking tracking,
    @DefaultValue("4096") @Min(0) long taskRecords,
    @DefaultValue("0") @Min(0) int minTrainers) {

  public MasterProperties {
    requirePositive("paramserver.master.task-timeout", taskTimeout);
    requirePositive("paramserver.master.timeout-check-interval", timeoutCheckInterval);
    requirePositive("paramserver.master.wait-retry", waitRetry);
  }

  /** Defaults, for tests and tools. */
  public static MasterProperties defaults() {
    return new MasterProperties(
        1,
        1,
        Duration.ofSeconds(60),
        3,
        Duration.ofSeconds(1),
        Duration.ofMillis(200),
        AdaptiveTimeout.disabled(),
        0,
        Console.defaults(),
        Tracking.defaults(),
        4096,
        0);
  }

  /**
   * Run tracking: the leader master appends a line per ended pass and a line of training loss about
   * every {@code lossEveryRecords} records to {@code metrics.jsonl}, writes the job's
   * hyperparameters to {@code params.json} beside it, and the same values to a TensorBoard event
   * file (scalars and the hparams plugin's data). Checked at start: a directory that cannot be
   * written stops the master when it was set, and switches tracking off (with a warning) when it is
   * the default.
   *
   * @param enabled whether the run is tracked at all (default true)
   * @param dir the job's tracking directory: {@code metrics.jsonl}, {@code params.json} and the
   *     TensorBoard event files; unset: {@code <java.io.tmpdir>/paramserver-tracking/<job>} ({@code
   *     run-local} sets the run folder; mount a volume and set it to keep the files)
   * @param metricsFile the JSON-lines file (per pass: step, pass, losses, accuracy, AUC, records,
   *     samples/s, times; per point of training loss: samples, train loss); unset: {@code
   *     <dir>/metrics.jsonl}. {@code params.json} is written beside it
   * @param tensorboardDir the directory of the TensorBoard event file; unset: {@code dir}
   * @param lossEveryRecords about how many records the job trains between two points of the
   *     training loss (the trainers report their loss in windows of this many records with each
   *     finished task; a point is written once the job's trained records pass the next multiple), 1
   *     to 1e9 (default 1000)
   */
  public record Tracking(
      @DefaultValue("true") boolean enabled,
      Path dir,
      Path metricsFile,
      Path tensorboardDir,
      @DefaultValue("1000") @Min(1) @Max(1_000_000_000) long lossEveryRecords) {

    /** The defaults: on, in the default directory, a loss point every 1000 records. */
    public static Tracking defaults() {
      return new Tracking(true, null, null, null, 1000);
    }

    /** Tracking switched off (for tests and tools). */
    public static Tracking off() {
      return new Tracking(false, null, null, null, 1000);
    }
  }

  /**
   * How the leader samples the job for {@code /admin/job} and the console.
   *
   * @param sampleInterval time between samples of the job, the pservers' and the trainers' status
   *     (default 1s)
   * @param history samples kept for the curves over time (default 1800: 30 minutes at 1 s)
   * @param events events kept (default 200)
   * @param callTimeout timeout of each status call to a pserver or trainer (default 2s)
   */
  public record Console(
      @DefaultValue("1s") @NotNull Duration sampleInterval,
      @DefaultValue("1800") @Min(10) int history,
      @DefaultValue("200") @Min(10) int events,
      @DefaultValue("2s") @NotNull Duration callTimeout) {

    public Console {
      requirePositive("paramserver.master.console.sample-interval", sampleInterval);
      requirePositive("paramserver.master.console.call-timeout", callTimeout);
    }

    /** The default sampling. */
    public static Console defaults() {
      return new Console(Duration.ofSeconds(1), 1800, 200, Duration.ofSeconds(2));
    }
  }

  /**
   * Adaptive task timeout: {@code multiplier} times the median duration of the last {@code window}
   * finished tasks, kept between {@code floor} and {@code ceiling}. Until {@code minSamples} tasks
   * have finished, {@code task-timeout} applies.
   *
   * @param enabled whether the timeout adapts to the observed task durations (default false)
   * @param multiplier how many median task durations a trainer gets (default 3)
   * @param floor the shortest timeout ever given (default 5s)
   * @param ceiling the longest timeout ever given (default 10m)
   * @param window how many recent task durations the median is taken over (default 100)
   * @param minSamples finished tasks needed before the median is used (default 5)
   */
  public record AdaptiveTimeout(
      @DefaultValue("false") boolean enabled,
      @DefaultValue("3.0") @DecimalMin("1.0") double multiplier,
      @DefaultValue("5s") @NotNull Duration floor,
      @DefaultValue("10m") @NotNull Duration ceiling,
      @DefaultValue("100") @Min(1) int window,
      @DefaultValue("5") @Min(1) int minSamples) {

    public AdaptiveTimeout {
      requirePositive("paramserver.master.adaptive-timeout.floor", floor);
      requirePositive("paramserver.master.adaptive-timeout.ceiling", ceiling);
      if (floor != null && ceiling != null && ceiling.compareTo(floor) < 0) {
        throw new IllegalArgumentException(
            "paramserver.master.adaptive-timeout.ceiling ("
                + ceiling
                + ") is below the floor ("
                + floor
                + "): raise the ceiling or lower the floor");
      }
    }

    /** The adaptive timeout switched off. */
    public static AdaptiveTimeout disabled() {
      return new AdaptiveTimeout(false, 3.0, Duration.ofSeconds(5), Duration.ofMinutes(10), 100, 5);
    }
  }

  private static void requirePositive(String name, Duration d) {
    if (d != null && (d.isZero() || d.isNegative())) {
      throw new IllegalArgumentException(name + " must be positive, got " + d);
    }
  }
}
