package dev.paramserver.bench.train;

import dev.paramserver.models.ShardedWriter;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.Compressor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Click-through data for the training benchmark: {@value #FIELDS} categorical fields, each value
 * drawn Zipf-distributed (s = {@value #ZIPF_S}) over {@code ids / FIELDS} values of its field, so
 * the id space holds {@code ids} distinct ids (10M in the benchmark) of which a long tail is seen
 * once or never, as in real click logs. Labels come from a hidden logistic model whose weight of
 * each id is a hash of it (no table of 10M weights).
 */
public final class CtrData {
  public static final int FIELDS = 16;
  static final double ZIPF_S = 1.05;

  private final long valuesPerField;
  private final double[] cdf;
  private final double total;

  public CtrData(long ids) {
    valuesPerField = ids / FIELDS;
    // The CDF over the first 2^20 ranks; ranks beyond are drawn uniformly from the tail, which
    // carries the remaining mass of a Zipf law (close enough for a benchmark, and O(1) memory).
    int head = (int) Math.min(valuesPerField, 1 << 20);
    cdf = new double[head];
    double sum = 0;
    for (int r = 0; r < head; r++) {
      sum += 1 / Math.pow(r + 1, ZIPF_S);
      cdf[r] = sum;
    }
    double tail = 0;
    if (valuesPerField > head) {
      // integral of x^-s from head to valuesPerField
      tail = (Math.pow(valuesPerField, 1 - ZIPF_S) - Math.pow(head, 1 - ZIPF_S)) / (1 - ZIPF_S);
    }
    total = sum + tail;
  }

  /** Writes {@code train} and {@code test} records as {@code dir/{train-*,test-*}.recordio}. */
  public void write(Path dir, int train, int test, int shards) throws IOException {
    Files.createDirectories(dir);
    write(ShardedWriter.shardPaths(dir.resolve("train").toString(), shards), train, 1);
    write(ShardedWriter.shardPaths(dir.resolve("test").toString(), 1), test, 2);
  }

  private void write(List<Path> files, int records, long seed) throws IOException {
    SplittableRandom r = new SplittableRandom(seed);
    ShardedWriter w = new ShardedWriter(files, Compressor.SNAPPY, 1000);
    try {
      for (int i = 0; i < records; i++) {
        w.write(next(r));
      }
      w.close();
    } catch (IOException | RuntimeException e) {
      w.abort();
      throw e;
    }
  }

  /**
   * The ids of one record ({@value #FIELDS}, one per field), drawn as {@link #write} draws them,
   * into {@code out} from {@code at}.
   */
  public void ids(SplittableRandom r, long[] out, int at) {
    for (int f = 0; f < FIELDS; f++) {
      out[at + f] = (long) f * valuesPerField + rank(r);
    }
  }

  /** {@code n} records drawn as {@link #write} draws them, from seed {@code seed}. */
  public List<Example> examples(int n, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    List<Example> out = new java.util.ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(next(r));
    }
    return out;
  }

  private Example next(SplittableRandom r) {
    Example.Builder b = Example.newBuilder();
    double logit = -1.0;
    for (int f = 0; f < FIELDS; f++) {
      long id = (long) f * valuesPerField + rank(r);
      logit += weight(id);
      b.addSparseIds(id).addSparseValues(1f);
    }
    return b.setLabel(r.nextDouble() < 1 / (1 + Math.exp(-logit)) ? 1 : 0).build();
  }

  private long rank(SplittableRandom r) {
    double u = r.nextDouble() * total;
    if (u < cdf[cdf.length - 1]) {
      int i = Arrays.binarySearch(cdf, u);
      return i < 0 ? -i - 1 : i;
    }
    return cdf.length + r.nextLong(valuesPerField - cdf.length);
  }

  /** The hidden model's weight of an id: a Gaussian-like value hashed from the id. */
  private static double weight(long id) {
    SplittableRandom r = new SplittableRandom(id * 0x9E3779B97F4A7C15L);
    return r.nextGaussian() * 0.9;
  }
}
