package dev.paramserver.bench.train;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;

/**
 * The training baseline: the same model, data, batch size and plain SGD as the distributed job, in
 * one JVM with no RPC. Each pass reads the RecordIO files, shuffles, cuts batches, trains and
 * evaluates on the test set, as a trainer does per pass. Sparse rows start as the pservers start
 * them (deterministic per table and id), so the two reach the same quality.
 *
 * <p>Run by {@link TrainSuite} in a JVM of its own, so that its start-up counts as the distributed
 * job's does: {@code main} takes {@code type features classes hidden embeddingWidth batch lr passes
 * trainGlob testGlob} and prints {@code pass=<i> records=<n> seconds=<s>} per pass and {@code
 * accuracy=} and {@code auc=} at the end, and for a model with sparse tables {@code
 * rows_per_sample=}: the distinct ids of each batch of the first pass, summed, per record (the
 * embedding rows a batch reads and updates; counted in the warm-up pass, outside the steady state).
 */
public final class SingleJvmTrainer {
  private SingleJvmTrainer() {}

  public static void main(String[] args) throws IOException {
    List<Integer> hidden =
        args[3].equals("-")
            ? List.of()
            : Arrays.stream(args[3].split(",")).map(Integer::parseInt).toList();
    ModelSpec spec =
        new ModelSpec(
            args[0],
            Integer.parseInt(args[1]),
            Integer.parseInt(args[2]),
            hidden,
            Mlp.Activation.RELU,
            Integer.parseInt(args[4]));
    run(
        spec,
        Integer.parseInt(args[5]),
        Float.parseFloat(args[6]),
        Integer.parseInt(args[7]),
        args[8],
        args[9]);
  }

  /** The arguments of {@link #main} for {@code w}. */
  static List<String> arguments(Workload w) {
    ModelSpec s = w.spec();
    String hidden =
        s.hidden().isEmpty()
            ? "-"
            : String.join(",", s.hidden().stream().map(String::valueOf).toList());
    return List.of(
        s.type(),
        Integer.toString(s.features()),
        Integer.toString(s.classes()),
        hidden,
        Integer.toString(s.embeddingWidth()),
        Integer.toString(w.batch()),
        Float.toString(w.lr()),
        Integer.toString(w.passes()),
        w.trainGlob(),
        w.testGlob());
  }

  static void run(
      ModelSpec spec, int batchSize, float lr, int passes, String trainGlob, String testGlob)
      throws IOException {
    List<Example> test = Dataset.readGlobs(List.of(testGlob));
    Model model = ModelFactory.create(spec);
    Parameters params = Initializers.initial(model, 42);
    Parameters grads = Parameters.zerosLike(model);
    Map<String, Float> rowStddev = rowStddev(model);
    Dataset testSet = new Dataset(test, spec.features());
    Evaluation eval = null;
    long batchRows = 0;
    long pass0Records = 0;
    for (int pass = 0; pass < passes; pass++) {
      long t0 = System.nanoTime();
      List<Example> train = new ArrayList<>(Dataset.readGlobs(List.of(trainGlob)));
      Collections.shuffle(train, new Random(pass));
      long n = 0;
      for (Batch b : new Dataset(train, spec.features()).batches(batchSize)) {
        if (pass == 0 && !rowStddev.isEmpty()) {
          batchRows += distinct(b.sparseIds());
          pass0Records += b.size();
        }
        step(model, params, grads, rowStddev, b, lr);
        n += b.size();
      }
      eval = Evaluation.of(model, params, testSet, 1024, b -> createRows(params, rowStddev, b));
      System.out.printf(
          Locale.ROOT,
          "pass=%d records=%d seconds=%.4f%n",
          pass,
          n,
          (System.nanoTime() - t0) / 1e9);
    }
    System.out.printf(Locale.ROOT, "accuracy=%.6f%nauc=%.6f%n", eval.accuracy(), eval.auc());
    if (pass0Records > 0) {
      System.out.printf(Locale.ROOT, "rows_per_sample=%.6f%n", (double) batchRows / pass0Records);
    }
  }

  /** The initial standard deviation of the rows of each sparse table of {@code model}. */
  public static Map<String, Float> rowStddev(Model model) {
    Map<String, Float> rowStddev = new java.util.HashMap<>();
    for (ParameterDef d : model.parameters()) {
      if (d.sparse()) {
        rowStddev.put(d.name(), d.init() instanceof ParameterDef.Normal n ? n.stddev() : 0f);
      }
    }
    return rowStddev;
  }

  /**
   * One JVM's whole step on batch {@code b}: the rows it lacks created, forward and backward into
   * {@code grads} (cleared first), plain SGD on every dense parameter and every row it touched.
   */
  public static void step(
      Model model,
      Parameters params,
      Parameters grads,
      Map<String, Float> rowStddev,
      Batch b,
      float lr) {
    createRows(params, rowStddev, b);
    grads.clear();
    model.trainStep(params, b, grads);
    for (String name : params.denseNames()) {
      float[] w = params.dense(name);
      float[] g = grads.dense(name);
      for (int i = 0; i < w.length; i++) {
        w[i] -= lr * g[i];
      }
    }
    for (String name : params.sparseNames()) {
      Parameters.SparseTable table = params.sparse(name);
      grads
          .sparse(name)
          .forEach(
              (id, g) -> {
                float[] w = table.row(id);
                for (int i = 0; i < w.length; i++) {
                  w[i] -= lr * g[i];
                }
              });
    }
  }

  /** How many distinct values {@code ids} holds. */
  static int distinct(long[] ids) {
    long[] sorted = ids.clone();
    Arrays.sort(sorted);
    int n = 0;
    for (int i = 0; i < sorted.length; i++) {
      if (i == 0 || sorted[i] != sorted[i - 1]) {
        n++;
      }
    }
    return n;
  }

  /** Gives every id of the batch without a row the row a pserver would create for it. */
  private static void createRows(Parameters params, Map<String, Float> stddev, Batch b) {
    for (Map.Entry<String, Float> e : stddev.entrySet()) {
      Parameters.SparseTable table = params.sparse(e.getKey());
      for (long id : b.sparseIds()) {
        if (table.rowOrNull(id) == null) {
          float[] row = new float[table.width()];
          if (e.getValue() > 0) {
            SplittableRandom r = new SplittableRandom(rowSeed(e.getKey(), id));
            for (int i = 0; i < row.length; i++) {
              row[i] = (float) (r.nextGaussian() * e.getValue());
            }
          }
          table.put(id, row);
        }
      }
    }
  }

  /** The seed a pserver draws row {@code id} of {@code table} from (its SparseTable.seed). */
  private static long rowSeed(String table, long row) {
    long h = 1125899906842597L;
    for (int i = 0; i < table.length(); i++) {
      h = 31 * h + table.charAt(i);
    }
    return h * 0x9E3779B97F4A7C15L + row;
  }
}
