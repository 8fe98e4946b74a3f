package dev.paramserver.bench.train;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.demo.DemoData;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One training workload of the benchmark: its data (generated into {@code dir}), model, batch size,
 * SGD learning rate and passes, trained the same way in one JVM and by the distributed setups.
 *
 * @param name the name in ratio lines ({@code softmax}, {@code mlp5m}, {@code ctr})
 * @param title a line for the report
 * @param spec the model (features and classes as in the data)
 * @param batch examples per mini-batch
 * @param lr SGD learning rate
 * @param passes passes over the training data (the first half is the warm-up: {@link
 *     TrainSuite#firstSteadyPass})
 * @param dir where the data lives: {@code train-*.recordio} and {@code test-*.recordio}
 * @param metric {@code accuracy} or {@code auc}
 * @param chunksPerTask the master's {@code chunks-per-task}: tasks of about 4,000 records, so that
 *     a task's fixed costs (its GetTask, the trainer's data read and the push of its last
 *     gradients) are small next to its training; the softmax's 1 + 1 job trained its passes 1.5-2
 *     times as fast with 8 chunks of 500 records a task as with 1. Set as chunks rather than
 *     through the master's {@code task-records}, which keeps 32 tasks a pass (3 chunks on the demo)
 * @param heapMiB the fixed heap ({@code -Xms} = {@code -Xmx}) of each pserver and trainer in MiB,
 *     so that a large table's figures come from a known heap; the single JVM, which holds the table
 *     and trains, gets twice it (the pserver's and the trainer's together). 0 keeps the roles'
 *     defaults ({@link ClusterSpec#defaultJvmOptions})
 */
record Workload(
    String name,
    String title,
    ModelSpec spec,
    int batch,
    float lr,
    int passes,
    Path dir,
    String metric,
    int chunksPerTask,
    int heapMiB) {

  /** The names {@link #named} knows, in the order the training section runs them. */
  static final List<String> NAMES = List.of("softmax", "mlp5m", "ctr", "ctr100m");

  /**
   * The workload called {@code name} (one of {@link #NAMES}), its data generated under {@code
   * root}; {@code quick} shrinks the data of those that have a quick size.
   *
   * @throws IllegalArgumentException for an unknown name
   */
  static Workload named(String name, Path root, boolean quick) throws IOException {
    return switch (name) {
      case "softmax" -> softmax(root, quick);
      case "mlp5m" -> mlp5m(root);
      case "ctr" -> ctr(root, quick);
      case "ctr100m" -> ctr100m(root);
      default ->
          throw new IllegalArgumentException(
              "unknown training workload '" + name + "': pick from " + String.join(",", NAMES));
    };
  }

  /** Training records of {@link #ctr100m}. */
  static final int CTR100M_RECORDS = 800_000;

  /** The fixed heap of {@link #ctr100m}'s pserver and trainer, MiB (the single JVM: twice it). */
  static final int CTR100M_HEAP_MIB = 2048;

  String trainGlob() {
    return dir.resolve("train-*.recordio").toString();
  }

  String testGlob() {
    return dir.resolve("test-*.recordio").toString();
  }

  /**
   * The JVM options of this workload's {@code role} processes: the role's defaults, with the heap
   * fixed at {@link #heapMiB} for pservers and trainers when the workload sets one.
   */
  List<String> jvmOptions(Role role) {
    return withHeap(ClusterSpec.defaultJvmOptions(role), role == Role.MASTER ? 0 : heapMiB);
  }

  /**
   * The JVM options of the single JVM: the trainer's defaults, with the heap fixed at twice {@link
   * #heapMiB} (it holds the table and trains) when the workload sets one.
   */
  List<String> singleJvmOptions() {
    return withHeap(ClusterSpec.defaultJvmOptions(Role.TRAINER), 2 * heapMiB);
  }

  /** {@code defaults} with {@code -Xms} and {@code -Xmx} set to {@code mib}, unless it is 0. */
  private static List<String> withHeap(List<String> defaults, int mib) {
    List<String> options = new ArrayList<>(defaults);
    if (mib > 0) {
      options.removeIf(o -> o.startsWith("-Xms") || o.startsWith("-Xmx"));
      options.add("-Xms" + mib + "m");
      options.add("-Xmx" + mib + "m");
    }
    return options;
  }

  /** The trainer properties (without the data) that select this model and optimizer. */
  Map<String, String> trainerProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("model", spec.type());
    if (!spec.hidden().isEmpty()) {
      p.put("hidden", spec.hidden().stream().map(String::valueOf).collect(Collectors.joining(",")));
    }
    p.put("embedding-width", Integer.toString(spec.embeddingWidth()));
    p.put("optimizer", "sgd");
    p.put("learning-rate", Float.toString(lr));
    p.put("batch-size", Integer.toString(batch));
    return p;
  }

  /**
   * The demo softmax: 32 features, 10 classes, 330 parameters, on the demo data of {@code
   * run-local.sh} (60,000 records; 20,000 with {@code --quick}).
   */
  static Workload softmax(Path root, boolean quick) throws IOException {
    Path dir = root.resolve("softmax");
    DemoData.Result d =
        DemoData.generate(dir, DemoData.Options.builder().train(quick ? 20_000 : 60_000).build());
    return new Workload(
        "softmax",
        "demo softmax (32 features, 10 classes, " + d.trainRecords() + " records)",
        ModelSpec.softmax((int) d.features(), d.classes()),
        64,
        0.1f,
        5,
        dir,
        "accuracy",
        8,
        0);
  }

  /**
   * The demo MLP of {@code docs/how-to/python.md}: the softmax's demo data (60,000 records; 20,000
   * with {@code quick}) through hidden layers 128 and 64 (13,066 parameters), batch 64, SGD 0.1.
   */
  static Workload smallMlp(Path root, boolean quick) throws IOException {
    Path dir = root.resolve("mlp-small");
    DemoData.Result d =
        DemoData.generate(dir, DemoData.Options.builder().train(quick ? 20_000 : 60_000).build());
    return new Workload(
        "mlp_small",
        "demo MLP 32-128-64-10 (13,066 parameters, " + d.trainRecords() + " records)",
        new ModelSpec(
            "mlp", (int) d.features(), d.classes(), List.of(128, 64), Mlp.Activation.RELU, 0),
        64,
        0.1f,
        5,
        dir,
        "accuracy",
        8,
        0);
  }

  /**
   * A dense MLP of about 5M parameters: 784 features, hidden 2560 and 1152, 10 classes, trained to
   * convergence (5 passes over class clusters 0.5 apart per feature: one JVM and 2 + 2 both reach
   * an accuracy of 1.0), so that the accuracy check compares trained models; with 3 passes over the
   * default separation one JVM stopped at 0.44 and asynchronous training, whose gradients are a
   * push or two stale, at 0.12-0.19.
   */
  static Workload mlp5m(Path root) throws IOException {
    Path dir = root.resolve("mlp5m");
    int features = 784;
    DemoData.Result d =
        DemoData.generate(
            dir,
            DemoData.Options.builder()
                .features(features)
                .classes(10)
                .train(512)
                .test(1000)
                .recordsPerChunk(64)
                .separation(0.5)
                .build());
    ModelSpec spec =
        new ModelSpec("mlp", features, d.classes(), List.of(2560, 1152), Mlp.Activation.RELU, 0);
    return new Workload(
        "mlp5m",
        "MLP 784-2560-1152-10 (4.97M parameters, " + d.trainRecords() + " records)",
        spec,
        64,
        0.05f,
        5,
        dir,
        "accuracy",
        1,
        0);
  }

  /** Click-through: sparse-lr with an 8-wide embedding over Zipf ids from a 10M-id space. */
  static Workload ctr(Path root, boolean quick) throws IOException {
    Path dir = root.resolve("ctr");
    int train = quick ? 40_000 : 60_000;
    new CtrData(10_000_000L).write(dir, train, 10_000, 4);
    return new Workload(
        "ctr",
        "click-through sparse-lr, embedding 8, "
            + CtrData.FIELDS
            + " Zipf fields over 10M ids ("
            + train
            + " records)",
        new ModelSpec("sparse-lr", 0, 2, List.of(), Mlp.Activation.RELU, 8),
        256,
        0.05f,
        3,
        dir,
        "auc",
        4,
        0);
  }

  /**
   * Click-through at scale: the {@link #ctr} model with a 16-wide embedding over a 100M-id space,
   * {@value #CTR100M_RECORDS} records, so that the pserver's table ends with about 3.3M rows (the
   * ids the records and the test set touch; a Zipf law over 100M ids puts most draws on a head of
   * popular ids), and 2 passes (the first fills the table: the warm-up; the second is the steady
   * state). Pservers and trainers run with a fixed heap of {@value #CTR100M_HEAP_MIB} MiB, the
   * single JVM with twice it.
   */
  static Workload ctr100m(Path root) throws IOException {
    Path dir = root.resolve("ctr100m");
    new CtrData(100_000_000L).write(dir, CTR100M_RECORDS, 10_000, 4);
    return new Workload(
        "ctr100m",
        "click-through sparse-lr, embedding 16, "
            + CtrData.FIELDS
            + " Zipf fields over 100M ids ("
            + CTR100M_RECORDS
            + " records)",
        new ModelSpec("sparse-lr", 0, 2, List.of(), Mlp.Activation.RELU, 16),
        256,
        0.05f,
        2,
        dir,
        "auc",
        4,
        CTR100M_HEAP_MIB);
  }
}
