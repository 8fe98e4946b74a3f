package dev.paramserver.localcluster;

import dev.paramserver.localcluster.RunOptionConverters.AtLeastOne;
import dev.paramserver.localcluster.RunOptionConverters.ExtraConverter;
import dev.paramserver.localcluster.RunOptionConverters.HiddenSizes;
import dev.paramserver.localcluster.RunOptionConverters.LearningRate;
import dev.paramserver.localcluster.RunOptionConverters.ModeName;
import dev.paramserver.localcluster.RunOptionConverters.ModelName;
import dev.paramserver.localcluster.RunOptionConverters.NiceValue;
import dev.paramserver.localcluster.RunOptionConverters.NonNegative;
import dev.paramserver.localcluster.RunOptionConverters.OptimizerName;
import dev.paramserver.localcluster.RunOptionConverters.ScheduleName;
import dev.paramserver.localcluster.RunOptionConverters.TimeoutConverter;
import dev.paramserver.localcluster.RunOptionConverters.UnitInterval;
import dev.paramserver.localcluster.RunOptionConverters.WholeNumber;
import dev.paramserver.localcluster.RunOptionConverters.ZeroOrMore;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The options of {@code run-local}, declared once for picocli: {@link RunLocal}'s own main parses
 * them, and {@code psctl run-local} (behind {@code scripts/run-local.sh}) mixes them in. Both
 * {@code --name value} and {@code --name=value} work. Defaults: softmax, sgd, lr 0.1, batch 64, 3
 * passes, 2 pservers, 2 trainers, 1 master, run folder ./runs/&lt;timestamp&gt;, job "local",
 * timeout 15 min.
 */
@Command(
    name = "run-local",
    sortOptions = false,
    description = {
      "Runs etcd, masters, pservers and trainers as local processes on 127.0.0.1, trains a model,",
      "prints progress per pass and finally",
      "  RESULT accuracy=<a> loss=<l> samples_per_s=<s> elapsed_s=<t> train_s=<t>",
      "then stops everything. Exit code: 0 done, 1 the job failed or timed out, 2 bad usage or a"
          + " missing prerequisite.",
      ""
    })
public final class RunOptions {
  @Option(
      names = "--train",
      paramLabel = "GLOB",
      description = "training RecordIO files (required unless --demo-data)")
  String train;

  @Option(
      names = "--test",
      paramLabel = "GLOB",
      description = "test files evaluated after each pass (default: the training files)")
  String test;

  @Option(
      names = "--demo-data",
      paramLabel = "DIR",
      description = "use DIR/train-*.recordio and DIR/test-*.recordio")
  Path demoData;

  @Option(
      names = "--model",
      paramLabel = "NAME",
      defaultValue = "softmax",
      converter = ModelName.class,
      description = "softmax (default), mlp, sparse-lr")
  String model;

  @Option(
      names = "--hidden",
      paramLabel = "SIZES",
      converter = HiddenSizes.class,
      description = "hidden layer sizes for mlp, e.g. 128,64")
  String hidden;

  @Option(
      names = "--optimizer",
      paramLabel = "NAME",
      defaultValue = "sgd",
      converter = OptimizerName.class,
      description = "sgd (default), momentum, nesterov, adam, adamw, adagrad, rmsprop, adadelta")
  String optimizer;

  @Option(
      names = "--lr",
      paramLabel = "X",
      defaultValue = "0.1",
      converter = LearningRate.class,
      description = "learning rate (default 0.1)")
  String lr;

  @Option(
      names = "--batch-size",
      paramLabel = "B",
      defaultValue = "64",
      converter = AtLeastOne.class,
      description = "mini-batch size (default 64)")
  int batchSize;

  @Option(
      names = "--passes",
      paramLabel = "N",
      defaultValue = "3",
      converter = AtLeastOne.class,
      description = "passes over the data (default 3)")
  int passes;

  @Option(
      names = "--sync",
      arity = "0..1",
      paramLabel = "true|false",
      description = "synchronous training (default asynchronous)")
  boolean sync;

  @Option(
      names = "--mode",
      paramLabel = "MODE",
      converter = ModeName.class,
      description = "async (default), sync or bounded-staleness")
  String mode;

  @Option(
      names = "--staleness",
      paramLabel = "K",
      converter = WholeNumber.class,
      description = "bounded-staleness: pushes a trainer may run ahead of the slowest (default 4)")
  String staleness;

  @Option(
      names = "--init-from",
      paramLabel = "MODEL",
      description =
          "warm start: initialise the pservers from this model file (a path or s3:// URI)")
  String initFrom;

  @Option(
      names = "--momentum",
      paramLabel = "X",
      converter = UnitInterval.class,
      description = "SGD momentum in [0, 1) (momentum, nesterov: 0.9 by default)")
  String momentum;

  @Option(
      names = "--weight-decay",
      paramLabel = "X",
      converter = NonNegative.class,
      description = "L2 weight decay (adamw: decoupled)")
  String weightDecay;

  @Option(
      names = "--beta1",
      paramLabel = "X",
      converter = UnitInterval.class,
      description = "adam, adamw: first-moment decay (default 0.9)")
  String beta1;

  @Option(
      names = "--beta2",
      paramLabel = "X",
      converter = UnitInterval.class,
      description = "adam, adamw: second-moment decay (default 0.999)")
  String beta2;

  @Option(
      names = "--epsilon",
      paramLabel = "X",
      converter = LearningRate.class,
      description = "numerical stabiliser of adam, adagrad, rmsprop, adadelta")
  String epsilon;

  @Option(
      names = "--clip-value",
      paramLabel = "X",
      converter = NonNegative.class,
      description = "clip each gradient element to [-X, X] (0: off)")
  String clipValue;

  @Option(
      names = "--clip-norm",
      paramLabel = "X",
      converter = NonNegative.class,
      description = "rescale each block's gradient to L2 norm at most X (0: off)")
  String clipNorm;

  @Option(
      names = "--lr-schedule",
      paramLabel = "NAME",
      converter = ScheduleName.class,
      description = "constant (default), step, exponential, warmup-cosine, warmup-linear")
  String lrSchedule;

  @Option(
      names = "--lr-step-size",
      paramLabel = "N",
      converter = WholeNumber.class,
      description = "step: updates between two decays")
  String lrStepSize;

  @Option(
      names = "--lr-gamma",
      paramLabel = "X",
      converter = LearningRate.class,
      description = "step, exponential: decay factor (default 0.1)")
  String lrGamma;

  @Option(
      names = "--lr-warmup-steps",
      paramLabel = "N",
      converter = WholeNumber.class,
      description = "warmup-*: updates of linear warm-up")
  String lrWarmupSteps;

  @Option(
      names = "--lr-total-steps",
      paramLabel = "N",
      converter = WholeNumber.class,
      description = "warmup-*: update count where the decay ends")
  String lrTotalSteps;

  @Option(
      names = "--lr-min",
      paramLabel = "X",
      converter = NonNegative.class,
      description = "warmup-*: final learning rate (default 0)")
  String lrMin;

  @Option(
      names = "--sparse-optimizer",
      paramLabel = "NAME",
      converter = OptimizerName.class,
      description = "optimizer of sparse tables (default: --optimizer), e.g. adagrad")
  String sparseOptimizer;

  @Option(
      names = "--sparse-lr",
      paramLabel = "X",
      converter = LearningRate.class,
      description = "learning rate of sparse tables (default: --lr)")
  String sparseLr;

  @Option(
      names = "--format",
      paramLabel = "F",
      description = "input format: recordio (default), libsvm or csv")
  String format;

  @Option(
      names = "--standardize",
      description =
          "with --format csv: standardize the features (psctl convert --standardize on the"
              + " training file, its statistics reused for the test files)")
  boolean standardize;

  @Option(
      names = "--masters",
      paramLabel = "K",
      defaultValue = "1",
      converter = AtLeastOne.class,
      description = "masters, 1 leader + standbys (default 1)")
  int masters;

  @Option(
      names = "--pservers",
      paramLabel = "N",
      defaultValue = "2",
      converter = AtLeastOne.class,
      description = "parameter servers (default 2)")
  int pservers;

  @Option(
      names = "--trainers",
      paramLabel = "M",
      defaultValue = "2",
      converter = ZeroOrMore.class,
      description = {
        "trainer agents (default 2); 0: none, train with your own trainers",
        "(e.g. examples/python/train_mlp.py) against the masters it prints"
      })
  int trainers;

  @Option(
      names = "--serving",
      paramLabel = "N",
      defaultValue = "0",
      converter = ZeroOrMore.class,
      description = {
        "serving replicas (serving-service) following the job, answering Lookup and Pull",
        "on their gRPC ports (listed in cluster.json and printed); default 0"
      })
  int serving;

  @Option(
      names = "--training-nice",
      paramLabel = "N",
      converter = NiceValue.class,
      description = {
        "CPU priority (nice, 0-19) of trainers and pservers; default 10 with --serving",
        "(a serving replica then gets a core before them), else 0"
      })
  Integer trainingNice;

  @Option(
      names = "--run-dir",
      paramLabel = "DIR",
      description = "run folder for logs, checkpoints, cluster.json (default ./runs/<time>)")
  Path runDir;

  @Option(
      names = "--job",
      paramLabel = "NAME",
      defaultValue = "local",
      description = "job name, the etcd key prefix (default local)")
  String job;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      defaultValue = "15m",
      converter = TimeoutConverter.class,
      description = "give up after this long, e.g. 900s, 15m (default 15m)")
  Duration timeout;

  @Option(
      names = "--jar-dir",
      paramLabel = "DIR",
      description = "where the service exec jars are (default: <repo>/<module>/target)")
  Path jarDir;

  @Option(
      names = "--set",
      paramLabel = "ROLE.KEY=VALUE",
      converter = ExtraConverter.class,
      description = {
        "extra property for master|pserver|trainer|serving, e.g.",
        "--set pserver.paramserver.pserver.checkpoint-interval=10s (repeatable)"
      })
  List<Extra> extras = new ArrayList<>();

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "show this help")
  boolean help;

  /** One {@code --set role.key=value}. */
  public record Extra(Role role, String key, String value) {}

  /** Thrown for a bad command line; the message says what is wrong. */
  public static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UsageException(String message) {
      super(message);
    }
  }

  /**
   * Parses and validates {@code args} and sets the default run folder.
   *
   * @throws UsageException naming the bad option
   */
  static RunOptions parse(String... args) {
    RunOptions o = new RunOptions();
    try {
      new CommandLine(o).parseArgs(args);
    } catch (ParameterException e) {
      throw new UsageException(e.getMessage());
    }
    if (!o.help) {
      o.validate();
    }
    o.runDir();
    return o;
  }

  /**
   * Checks what picocli cannot check option by option: that there is training data and that the
   * format and the job name are valid.
   *
   * @throws UsageException naming the problem
   */
  public void validate() {
    if (train == null && demoData == null) {
      throw new UsageException(
          "no training data: pass --train GLOB (and --test GLOB) or --demo-data DIR;"
              + " scripts/run-local.sh generates demo data when neither is given");
    }
    if (train != null && demoData != null) {
      throw new UsageException("pass either --train or --demo-data, not both");
    }
    format = format == null ? null : format.toLowerCase(Locale.ROOT);
    if (format != null
        && !format.equals("recordio")
        && !format.equals("libsvm")
        && !format.equals("csv")) {
      throw new UsageException("--format must be recordio, libsvm or csv, got '" + format + "'");
    }
    if (standardize && !isCsv()) {
      throw new UsageException(
          "--standardize needs --format csv (CSV input converted for the run)");
    }
    if (sync && mode != null && !mode.equals("sync")) {
      throw new UsageException("--sync contradicts --mode " + mode + ": pass only --mode");
    }
    if (!job.matches("[A-Za-z0-9._-]+")) {
      throw new UsageException("--job '" + job + "' may use only letters, digits, '.', '_', '-'");
    }
  }

  /** The run folder: --run-dir, else ./runs/&lt;time&gt;, fixed on the first call. */
  public Path runDir() {
    if (runDir == null) {
      runDir =
          Path.of(
              "runs", LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }
    return runDir;
  }

  /** Whether neither --train nor --demo-data was given. */
  public boolean hasNoInput() {
    return train == null && demoData == null;
  }

  /** Whether the input is LibSVM text (--format libsvm), to be converted before the run. */
  public boolean isLibSvm() {
    return "libsvm".equalsIgnoreCase(format);
  }

  /** Whether the input is CSV text (--format csv), to be converted before the run. */
  public boolean isCsv() {
    return "csv".equalsIgnoreCase(format);
  }

  /** Whether CSV input is standardized as it is converted (--standardize). */
  public boolean standardize() {
    return standardize;
  }

  /** The --train glob as given, or null. */
  public String train() {
    return train;
  }

  /** The --test glob as given, or null. */
  public String test() {
    return test;
  }

  /** The --demo-data directory, or null. */
  public Path demoData() {
    return demoData;
  }

  /** Trains on the demo data in {@code dir} (generated for the run). */
  public void useDemoData(Path dir) {
    this.demoData = dir;
    this.train = null;
    this.test = null;
  }

  /** Trains on RecordIO files converted for the run; {@code test} may be null. */
  public void useRecordIo(String train, String test) {
    this.train = train;
    this.test = test;
    this.demoData = null;
    this.format = "recordio";
    this.standardize = false;
  }

  /** The training glob, from --train or --demo-data. */
  String trainGlob() {
    return train != null ? train : demoData.resolve("train-*.recordio").toString();
  }

  /** The test glob: --test, else the demo data's test files, else the training files. */
  String testGlob() {
    if (test != null) {
      return test;
    }
    return demoData != null ? demoData.resolve("test-*.recordio").toString() : trainGlob();
  }
}
