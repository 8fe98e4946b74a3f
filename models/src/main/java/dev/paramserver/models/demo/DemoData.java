package dev.paramserver.models.demo;

import dev.paramserver.models.ShardedWriter;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.Compressor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

/**
 * Deterministic synthetic datasets, so the demo job needs no download. The same options (seed
 * included) always give byte-identical files.
 *
 * <ul>
 *   <li>Dense (default): {@code classes} Gaussian classes in {@code features} dimensions. Class
 *       means are drawn from N(0, separation²) per dimension, samples add unit Gaussian noise and
 *       labels are uniform at random. With the automatic separation, 6/sqrt(2·features) (0.75 for
 *       32 dimensions), the expected distance between two means is about 6 noise standard
 *       deviations: the nearest-mean rule (Bayes-optimal here, and a linear classifier) scores
 *       about 0.97-0.99.
 *   <li>Sparse ({@link Options#sparse()}): click-through-like binary data. Each record has one
 *       value per categorical field (skewed towards small values), hashed with the field into
 *       {@code 2^hashBits} ids ({@code sparse_ids}, {@code sparse_values} all 1.0); the label is
 *       drawn from a hidden logistic model with one weight per (field, value) and a bias of -0.5.
 * </ul>
 *
 * Files: {@code DIR/train-00000.recordio ...} ({@code shards} files, records dealt round-robin) and
 * {@code DIR/test-00000.recordio}.
 */
public final class DemoData {
  private DemoData() {}

  /**
   * What {@link #generate} wrote.
   *
   * @param features dense width, or {@code 2^hashBits} for sparse data
   * @param oracleTestAccuracy accuracy of the generating model on the test set (nearest class mean
   *     for dense data, the hidden logistic model for sparse data): about the best any model can do
   */
  public record Result(
      List<Path> trainFiles,
      Path testFile,
      long trainRecords,
      long testRecords,
      int classes,
      long features,
      double oracleTestAccuracy) {}

  /** Writes the dataset described by {@code opts} into {@code dir} (created if missing). */
  public static Result generate(Path dir, Options opts) throws IOException {
    Files.createDirectories(dir);
    Generator gen = opts.sparse() ? new SparseGenerator(opts) : new GaussianGenerator(opts);
    List<Path> trainFiles =
        ShardedWriter.shardPaths(dir.resolve("train").toString(), opts.shards());
    Path testFile = ShardedWriter.shardPaths(dir.resolve("test").toString(), 1).get(0);
    write(trainFiles, opts, opts.train(), gen, new Random(mix(opts.seed(), 1)), null);
    long[] correct = {0};
    write(List.of(testFile), opts, opts.test(), gen, new Random(mix(opts.seed(), 2)), correct);
    return new Result(
        trainFiles,
        testFile,
        opts.train(),
        opts.test(),
        opts.sparse() ? 2 : opts.classes(),
        gen.features(),
        opts.test() == 0 ? Double.NaN : (double) correct[0] / opts.test());
  }

  private static void write(
      List<Path> files, Options opts, int count, Generator gen, Random rnd, long[] correct)
      throws IOException {
    ShardedWriter w = new ShardedWriter(files, opts.compressor(), opts.recordsPerChunk());
    try {
      for (int i = 0; i < count; i++) {
        Example e = gen.next(rnd);
        if (correct != null && gen.oraclePredict(e) == e.getLabel()) {
          correct[0]++;
        }
        w.write(e);
      }
      w.close();
    } catch (IOException | RuntimeException e) {
      w.abort();
      throw e;
    }
  }

  /** Derives independent, stable seeds from the user's seed. */
  static long mix(long seed, long stream) {
    long z = seed * 0x9E3779B97F4A7C15L + stream * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Produces examples and knows the generating model. */
  interface Generator {
    Example next(Random rnd);

    int oraclePredict(Example e);

    long features();
  }

  /**
   * Generation options; start from {@link #builder()}. Defaults: 10 classes, 32 features, 60000
   * train and 10000 test records, seed 42, 500 records per chunk, 4 train shards, snappy, dense,
   * automatic separation; sparse: 20 fields, 20 hash bits.
   */
  public record Options(
      int classes,
      int features,
      int train,
      int test,
      long seed,
      int recordsPerChunk,
      int shards,
      Compressor compressor,
      boolean sparse,
      double separation,
      int fields,
      int hashBits) {
    public Options {
      check(classes >= 2, "classes must be >= 2, got " + classes);
      check(features >= 1, "features must be >= 1, got " + features);
      check(train >= 0 && test >= 0, "train and test counts must be >= 0");
      check(recordsPerChunk >= 1, "records per chunk must be >= 1, got " + recordsPerChunk);
      check(shards >= 1 && shards <= 10_000, "shards must be in 1..10000, got " + shards);
      check(compressor != null, "compressor must be set");
      check(
          Double.isNaN(separation) || separation > 0,
          "separation must be > 0 (or NaN for automatic), got " + separation);
      check(fields >= 1 && fields <= 1000, "fields must be in 1..1000, got " + fields);
      check(hashBits >= 8 && hashBits <= 40, "hash bits must be in 8..40, got " + hashBits);
    }

    private static void check(boolean ok, String message) {
      if (!ok) {
        throw new IllegalArgumentException(message);
      }
    }

    public static Builder builder() {
      return new Builder();
    }

    /** The separation used: the given one, or 6/sqrt(2·features) when automatic. */
    public double effectiveSeparation() {
      return Double.isNaN(separation) ? 6.0 / Math.sqrt(2.0 * features) : separation;
    }

    /** Builder of {@link Options} with the documented defaults. */
    public static final class Builder {
      private int classes = 10;
      private int features = 32;
      private int train = 60_000;
      private int test = 10_000;
      private long seed = 42;
      private int recordsPerChunk = 500;
      private int shards = 4;
      private Compressor compressor = Compressor.SNAPPY;
      private boolean sparse;
      private double separation = Double.NaN;
      private int fields = 20;
      private int hashBits = 20;

      private Builder() {}

      public Builder classes(int v) {
        classes = v;
        return this;
      }

      public Builder features(int v) {
        features = v;
        return this;
      }

      public Builder train(int v) {
        train = v;
        return this;
      }

      public Builder test(int v) {
        test = v;
        return this;
      }

      public Builder seed(long v) {
        seed = v;
        return this;
      }

      public Builder recordsPerChunk(int v) {
        recordsPerChunk = v;
        return this;
      }

      public Builder shards(int v) {
        shards = v;
        return this;
      }

      public Builder compressor(Compressor v) {
        compressor = v;
        return this;
      }

      public Builder sparse(boolean v) {
        sparse = v;
        return this;
      }

      /** Per-dimension standard deviation of the class means; NaN (default) for automatic. */
      public Builder separation(double v) {
        separation = v;
        return this;
      }

      public Builder fields(int v) {
        fields = v;
        return this;
      }

      public Builder hashBits(int v) {
        hashBits = v;
        return this;
      }

      public Options build() {
        return new Options(
            classes,
            features,
            train,
            test,
            seed,
            recordsPerChunk,
            shards,
            compressor,
            sparse,
            separation,
            fields,
            hashBits);
      }
    }
  }
}
