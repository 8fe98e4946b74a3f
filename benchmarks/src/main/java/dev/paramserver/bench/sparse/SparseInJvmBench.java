package dev.paramserver.bench.sparse;

import dev.paramserver.bench.memory.MemorySuite;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.SparseTableStats;
import dev.paramserver.pserver.sparse.EvictionPolicy;
import dev.paramserver.pserver.sparse.SparseSettings;
import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.CheckedOutputStream;

/**
 * The in-JVM half of the sparse-table benchmarks, run by {@link SparseSuite} in a JVM of its own
 * (the 10M-row table needs a heap of about 3 GiB): a {@link ParameterShard} called directly with
 * the requests a trainer sends. Prints one {@code name=value} line per figure.
 *
 * <p>Arguments: {@code rows distinctIds seconds dir}.
 */
public final class SparseInJvmBench {
  static final int BATCH = 1024;
  static final int WIDTH_SMALL = 8;
  static final int WIDTH_LARGE = 64;

  private SparseInJvmBench() {}

  public static void main(String[] args) throws Exception {
    long rows = Long.parseLong(args[0]);
    int distinct = Integer.parseInt(args[1]);
    double seconds = Double.parseDouble(args[2]);
    Path dir = Path.of(args[3]);
    SparseWorkload zipf = new SparseWorkload(distinct, 1);
    List<long[]> batches = SparseWorkload.batches(zipf, 512, BATCH);
    for (int width : new int[] {WIDTH_SMALL, WIDTH_LARGE}) {
      ParameterShard shard = shard(SparseSettings.unlimited(), width);
      // Warm the table with every distinct id once, then measure on a populated table.
      rate(shard, batches, width, true, seconds / 2);
      print("push_rows_per_s_w" + width, rate(shard, batches, width, true, seconds));
      print("pull_rows_per_s_w" + width, rate(shard, batches, width, false, seconds));
    }
    eviction(batches, distinct, seconds);
    memoryAndCheckpoint(rows, dir);
  }

  static ParameterShard shard(SparseSettings settings, int... widths) {
    ParameterShard shard = new ParameterShard(true, settings);
    shard.init(SparseWorkload.init("bench", widths));
    shard.finishInit(SparseWorkload.finish("bench"));
    return shard;
  }

  /** Rows per second pushed (or pulled) for {@code seconds}, one thread, batches of 1024 ids. */
  static double rate(
      ParameterShard shard, List<long[]> batches, int width, boolean push, double seconds) {
    List<PushGradientsRequest> pushes =
        batches.stream().map(b -> SparseWorkload.push(width, b)).toList();
    List<PullParametersRequest> pulls =
        batches.stream().map(b -> SparseWorkload.pull(width, b)).toList();
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    long t0 = System.nanoTime();
    long n = 0;
    int i = 0;
    while (System.nanoTime() < deadline) {
      if (push) {
        shard.push(pushes.get(i));
      } else {
        shard.pull(pulls.get(i));
      }
      n += BATCH;
      i = (i + 1) % batches.size();
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  /** Pushes under a cap of half the distinct ids: rows/s and evictions/s. */
  private static void eviction(List<long[]> batches, int distinct, double seconds) {
    for (String policy : new String[] {"lfu", "ttl"}) {
      EvictionPolicy p =
          policy.equals("lfu")
              ? EvictionPolicy.lfu(Duration.ofMinutes(10))
              : EvictionPolicy.ttl(Duration.ofHours(1));
      SparseSettings capped = new SparseSettings(distinct / 2, Map.of(), null, p, 8, 1, 1 << 20);
      ParameterShard shard = shard(capped, WIDTH_SMALL);
      // Fill past the cap first with ids outside the Zipf ranks, so that the table is full.
      for (int r = 0; r < distinct; r += BATCH) {
        long[] ids = new long[Math.min(BATCH, distinct - r)];
        for (int k = 0; k < ids.length; k++) {
          ids[k] = SparseWorkload.id(r + k) ^ 0x5555L;
        }
        shard.push(SparseWorkload.push(WIDTH_SMALL, ids));
      }
      long before = stats(shard).evictions();
      long t0 = System.nanoTime();
      double rowsPerS = rate(shard, batches, WIDTH_SMALL, true, seconds);
      double elapsed = (System.nanoTime() - t0) / 1e9;
      SparseTableStats s = stats(shard);
      print("evict_push_rows_per_s_" + policy, rowsPerS);
      print("evictions_per_s_" + policy, (s.evictions() - before) / elapsed);
      print("evict_rows_held_" + policy, s.rows());
    }
  }

  private static SparseTableStats stats(ParameterShard shard) {
    return shard.sparseTables().get(0);
  }

  /** 10M rows of width 8 with Adam: live heap growth, then checkpoint write and load seconds. */
  private static void memoryAndCheckpoint(long rows, Path dir) throws Exception {
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    long before = MemorySuite.liveHeap(mem);
    ParameterShard shard = shard(SparseSettings.unlimited(), WIDTH_SMALL);
    long[] ids = new long[4096];
    long t0 = System.nanoTime();
    for (long r = 0; r < rows; r += ids.length) {
      int n = (int) Math.min(ids.length, rows - r);
      long[] batch = n == ids.length ? ids : new long[n];
      for (int k = 0; k < n; k++) {
        batch[k] = SparseWorkload.id(r + k);
      }
      shard.push(SparseWorkload.push(WIDTH_SMALL, batch));
    }
    print("fill_rows_per_s", rows / ((System.nanoTime() - t0) / 1e9));
    long after = MemorySuite.liveHeap(mem);
    SparseTableStats s = stats(shard);
    print("memory_rows", s.rows());
    print("memory_heap_growth_bytes", after - before);
    print("memory_table_bytes", s.bytes());
    print("memory_raw_bytes", rows * (8 + 4L * WIDTH_SMALL * 3));

    Path file = dir.resolve("sparse-10m.ckpt");
    t0 = System.nanoTime();
    CRC32 crc = new CRC32();
    try (OutputStream out =
        new CheckedOutputStream(
            new BufferedOutputStream(Files.newOutputStream(file), 1 << 16), crc)) {
      shard.writeCheckpoint(out);
    }
    print("checkpoint_write_s", (System.nanoTime() - t0) / 1e9);
    print("checkpoint_file_bytes", Files.size(file));
    shard = null;
    MemorySuite.liveHeap(mem);
    long beforeLoad = MemorySuite.liveHeap(mem);
    // The pserver's own load path: rows streamed into fresh stores, CRC checked, then installed.
    t0 = System.nanoTime();
    ParameterShard restored = new ParameterShard(true, SparseSettings.unlimited());
    CheckpointStore.Restorer restorer = CheckpointStore.restorer(restored);
    restorer.install(CheckpointStore.read(file.toString(), (int) crc.getValue(), restorer));
    print("checkpoint_load_s", (System.nanoTime() - t0) / 1e9);
    print("checkpoint_load_heap_growth_bytes", MemorySuite.liveHeap(mem) - beforeLoad);
    print("checkpoint_loaded_rows", stats(restored).rows());
    Files.delete(file);
  }

  private static void print(String name, double value) {
    System.out.println(String.format(Locale.ROOT, "%s=%.4f", name, value));
  }
}
