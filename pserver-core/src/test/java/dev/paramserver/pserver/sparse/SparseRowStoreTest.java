package dev.paramserver.pserver.sparse;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class SparseRowStoreTest {
  private static final int WIDTH = 4;
  private static final float INIT = 0.5f;
  private static final SparseRowStore.RowInit CONSTANT_INIT =
      (id, out, off) -> Arrays.fill(out, off, off + WIDTH, INIT);

  /** Adds 1 to every value and to the first slot. */
  private static final SparseRowStore.RowUpdate ADD_ONE =
      (i, values, slots, before) -> {
        for (int k = 0; k < values.length; k++) {
          values[k] += 1;
          slots[0][k] += 1;
        }
      };

  private final AtomicLong clock = new AtomicLong();

  private SparseRowStore store(TableSettings settings) {
    return new SparseRowStore(WIDTH, new float[] {0f, 0.1f}, CONSTANT_INIT, settings, clock::get);
  }

  private static TableSettings capped(long maxRows, EvictionPolicy policy) {
    return new TableSettings(maxRows, null, policy, 8, 1, 1 << 16);
  }

  private static float read(SparseRowStore s, long id) {
    float[] out = new float[WIDTH];
    s.read(id, out, 0);
    return out[0];
  }

  @Test
  void newRows_startFromTheirInitAndSlotInit_andPullsCreateNoRows() {
    SparseRowStore s = store(TableSettings.unlimited());
    assertThat(read(s, 9)).isEqualTo(INIT);
    assertThat(s.rows()).isZero();
    List<float[]> seen = new ArrayList<>();
    s.update(new long[] {9}, (i, v, slots, before) -> seen.add(slots[1].clone()));
    assertThat(seen.get(0)).containsOnly(0.1f);
    s.update(new long[] {9, 9}, ADD_ONE);
    assertThat(read(s, 9)).isEqualTo(INIT + 2);
    assertThat(s.rows()).isEqualTo(1);
  }

  /** The ids an update by {@code writer} answers, in the order of the answer. */
  private static List<Long> answered(SparseRowStore s, long[] ids, int writer, byte[] after) {
    int[] kept = new int[ids.length];
    int n = s.update(ids, ADD_ONE, after, writer, kept);
    List<Long> out = new ArrayList<>();
    for (int k = 0; k < (n < 0 ? ids.length : n); k++) {
      out.add(ids[n < 0 ? k : kept[k]]);
    }
    return out;
  }

  private static float answerValue(byte[] after, int row) {
    return java.nio.ByteBuffer.wrap(after)
        .order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .getFloat(row * WIDTH * Float.BYTES);
  }

  @Test
  void writerTag_answersOnlyRowsAnotherWriterOrNoneChangedLast_inTheOrderOfTheIds() {
    for (TableSettings settings :
        List.of(
            TableSettings.unlimited(), capped(100, EvictionPolicy.lfu(Duration.ofMinutes(1))))) {
      SparseRowStore s = store(settings);
      byte[] after = new byte[8 * WIDTH * Float.BYTES];
      // created by writer 7: every row answered
      assertThat(answered(s, new long[] {1, 2, 3, 4}, 7, after)).containsExactly(1L, 2L, 3L, 4L);
      // 7 again: only the new row 5
      assertThat(answered(s, new long[] {3, 5, 1}, 7, after)).containsExactly(5L);
      assertThat(answerValue(after, 0)).as("row 5 moved to the front").isEqualTo(INIT + 1);
      // writer 9 changes 2, an update without a tag changes 4, a restore puts 1
      assertThat(answered(s, new long[] {2}, 9, after)).containsExactly(2L);
      s.update(new long[] {4}, ADD_ONE);
      s.put(
          1,
          new float[WIDTH],
          new float[][] {new float[WIDTH], new float[WIDTH]},
          3,
          SparseRowStore.NO_SCORE);
      assertThat(answered(s, new long[] {4, 3, 2, 1}, 7, after)).containsExactly(4L, 2L, 1L);
      assertThat(answerValue(after, 0)).as("row 4 after three updates").isEqualTo(INIT + 3);
      assertThat(answerValue(after, 1)).as("row 2 after three updates").isEqualTo(INIT + 3);
      assertThat(answerValue(after, 2)).as("row 1 restored, then updated").isEqualTo(1f);
      // an id repeated: every row, each after its last occurrence
      assertThat(answered(s, new long[] {3, 3, 5}, 7, after)).containsExactly(3L, 3L, 5L);
      assertThat(answerValue(after, 0)).isEqualTo(INIT + 5);
      assertThat(answerValue(after, 1)).isEqualTo(INIT + 5);
    }
  }

  @Test
  void concurrentReadersAndOneWriterPerRow_seeWholeRowsAndLoseNoUpdate() throws Exception {
    SparseRowStore s = store(TableSettings.unlimited());
    int writers = 3;
    int pushes = 3_000;
    int idsPerWriter = 200;
    AtomicBoolean done = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(writers + 2);
    try {
      List<Future<?>> writing = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int writer = w;
        writing.add(
            pool.submit(
                () -> {
                  long[] batch = new long[16];
                  SplittableRandom random = new SplittableRandom(writer);
                  for (int p = 0; p < pushes; p++) {
                    for (int b = 0; b < batch.length; b++) {
                      batch[b] = random.nextInt(idsPerWriter) * writers + writer;
                    }
                    s.update(batch, ADD_ONE);
                  }
                }));
      }
      List<Future<Integer>> reading = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        reading.add(
            pool.submit(
                () -> {
                  int torn = 0;
                  float[] row = new float[WIDTH];
                  SplittableRandom random = new SplittableRandom();
                  while (!done.get()) {
                    s.read(random.nextInt(idsPerWriter * writers), row, 0);
                    for (float x : row) {
                      torn += x == row[0] ? 0 : 1;
                    }
                  }
                  return torn;
                }));
      }
      for (Future<?> f : writing) {
        f.get(50, TimeUnit.SECONDS);
      }
      done.set(true);
      for (Future<Integer> f : reading) {
        assertThat(f.get(10, TimeUnit.SECONDS)).as("torn rows read").isZero();
      }
    } finally {
      pool.shutdownNow();
    }
    double total = 0;
    for (long id = 0; id < idsPerWriter * writers; id++) {
      float v = read(s, id);
      total += v == INIT ? 0 : v - INIT;
    }
    assertThat(total).isEqualTo((double) writers * pushes * 16);
  }

  @Test
  void concurrentPushesOfTheSameRows_loseNoUpdate() throws Exception {
    SparseRowStore s = store(TableSettings.unlimited());
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        fs.add(
            pool.submit(
                () -> {
                  for (int p = 0; p < 2_000; p++) {
                    s.update(new long[] {1, 2, 3}, ADD_ONE);
                  }
                }));
      }
      for (Future<?> f : fs) {
        f.get(50, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    for (long id = 1; id <= 3; id++) {
      assertThat(read(s, id)).isEqualTo(INIT + 8_000);
    }
  }

  @Test
  void cap_holdsTheTableAtMaxRows_countsEvictions_andAnEvictedIdComesBackFresh() {
    SparseRowStore s = store(capped(100, EvictionPolicy.lfu(Duration.ofMinutes(1))));
    for (long id = 0; id < 1_000; id++) {
      s.update(new long[] {id}, ADD_ONE);
    }
    assertThat(s.rows()).isEqualTo(100);
    assertThat(s.evictions()).isEqualTo(900);
    long evicted = -1;
    for (long id = 0; id < 1_000 && evicted < 0; id++) {
      if (read(s, id) == INIT) {
        evicted = id;
      }
    }
    assertThat(evicted).isNotNegative();
    s.update(new long[] {evicted}, ADD_ONE);
    assertThat(read(s, evicted)).isEqualTo(INIT + 1);
  }

  @Test
  void cap_neverEvictsRowsOfTheBatchBeingApplied() {
    SparseRowStore s = store(capped(10, EvictionPolicy.lfu(Duration.ofMinutes(1))));
    long[] batch = new long[50];
    for (int i = 0; i < batch.length; i++) {
      batch[i] = 1_000 + i;
    }
    assertThat(s.update(batch, ADD_ONE)).isEqualTo(50);
    for (long id : batch) {
      assertThat(read(s, id)).as("row %d", id).isEqualTo(INIT + 1);
    }
    // Over the cap for now; later inserts bring the table back under it.
    for (long id = 0; id < 200; id++) {
      s.update(new long[] {id}, ADD_ONE);
    }
    assertThat(s.rows()).isLessThanOrEqualTo(10);
  }

  /**
   * A follower (a backup, a read replica) applies each record with exactly its primary's removals
   * and ends identical to it, in a capped table (most records remove rows) and an unlimited one
   * (none do, and the follower applies them stripe by stripe). The update depends on the row's
   * update count and the position in the batch, and batches repeat ids, so an update applied out of
   * order, twice, or to a row the primary had removed shows.
   */
  @Test
  void follower_replayingThePrimarysRemovals_endsIdenticalToIt() {
    SparseRowStore.RowUpdate orderSensitive =
        (i, values, slots, before) -> {
          for (int k = 0; k < values.length; k++) {
            values[k] = values[k] * 0.5f + i + before;
            slots[0][k] += values[k];
          }
        };
    for (TableSettings settings :
        List.of(TableSettings.unlimited(), capped(48, EvictionPolicy.lfu(Duration.ofMinutes(1))))) {
      SparseRowStore primary = store(settings);
      SparseRowStore follower = store(settings);
      java.util.Random random = new java.util.Random(7);
      int removed = 0;
      for (int b = 0; b < 300; b++) {
        long[] batch = random.longs(24, 0, 160).toArray();
        Removals recording = Removals.recording();
        primary.update(batch, orderSensitive);
        List<Removals.Removal> made = recording.recorded();
        Removals.end();
        removed += made.size();
        Removals.following(
            made.stream()
                .map(
                    r ->
                        new Removals.Removal(follower, r.update(), r.position(), r.phase(), r.id()))
                .toList());
        follower.update(batch, orderSensitive);
        Removals.end();
      }
      assertThat(removed > 0).as("rows removed in %s", settings).isEqualTo(settings.capped());
      assertThat(follower.rows()).isEqualTo(primary.rows());
      for (long id = 0; id < 160; id++) {
        float[] a = new float[WIDTH];
        float[] f = new float[WIDTH];
        assertThat(follower.read(id, f, 0)).as("row %d held", id).isEqualTo(primary.read(id, a, 0));
        assertThat(f).as("row %d", id).containsExactly(a);
      }
    }
  }

  @Test
  void cap_evictsTheOneUnpinnedRow_whenEverySampledRowIsPinnedByTheBatch() {
    // one stripe of 4 rows, 2 sampled per eviction: a batch of 3 resident ids and a new one leaves
    // one row to evict, which 2 random samples miss more often than not
    SparseRowStore s =
        store(new TableSettings(4, null, EvictionPolicy.lfu(Duration.ofMinutes(1)), 2, 1, 1 << 16));
    for (long id = 0; id < 4; id++) {
      s.update(new long[] {id}, ADD_ONE);
    }
    long[] resident = {0, 1, 2, 3};
    for (long next = 4; next < 204; next++) {
      int unpinned = (int) (next % 4);
      long[] batch = new long[4];
      for (int i = 0, j = 0; i < 4; i++) {
        if (i != unpinned) {
          batch[j++] = resident[i];
        }
      }
      batch[3] = next;
      assertThat(s.update(batch, ADD_ONE)).isEqualTo(4);
      assertThat(s.rows()).as("rows after inserting id %d", next).isEqualTo(4);
      assertThat(read(s, resident[unpinned])).as("the unpinned row was evicted").isEqualTo(INIT);
      resident[unpinned] = next;
    }
    assertThat(s.evictions()).isEqualTo(200);
  }

  @Test
  void lfu_keepsTheHotIdsOfAZipfStream() {
    int distinct = 20_000;
    int cap = 1_000;
    SparseRowStore s = store(capped(cap, EvictionPolicy.lfu(Duration.ofHours(1))));
    Zipf zipf = new Zipf(distinct, 1.1, 7);
    for (int i = 0; i < 400_000; i++) {
      s.update(new long[] {zipf.next()}, ADD_ONE);
    }
    int hot = 200;
    int kept = 0;
    for (int rank = 0; rank < hot; rank++) {
      kept += read(s, Zipf.id(rank)) != INIT ? 1 : 0;
    }
    assertThat(s.rows()).isEqualTo(cap);
    assertThat(kept).as("hottest %d ids kept", hot).isGreaterThanOrEqualTo(190);
  }

  @Test
  void ttl_dropsRowsNotUpdatedForTheTtl_belowTheCapToo() {
    SparseRowStore s = store(capped(Long.MAX_VALUE, EvictionPolicy.ttl(Duration.ofSeconds(60))));
    for (long id = 0; id < 100; id++) {
      s.update(new long[] {id}, ADD_ONE);
    }
    clock.set(30_000_000_000L);
    s.update(new long[] {5}, ADD_ONE);
    clock.set(61_000_000_000L);
    assertThat(read(s, 6)).as("expired row reads as fresh").isEqualTo(INIT);
    assertThat(read(s, 5)).isEqualTo(INIT + 2);
    // Pushes sweep expired rows away a few at a time.
    for (int i = 0; i < 1_000; i++) {
      s.update(new long[] {5}, ADD_ONE);
    }
    assertThat(s.rows()).isEqualTo(1);
    assertThat(s.evictions()).isEqualTo(99);
  }

  @Test
  void admission_givesARowOnlyAtTheThresholdthPush_andDropsTheEarlierOnes() {
    SparseRowStore s =
        store(
            new TableSettings(
                Long.MAX_VALUE, null, EvictionPolicy.lfu(Duration.ofHours(1)), 8, 3, 1 << 16));
    assertThat(s.update(new long[] {7, 7}, ADD_ONE)).isZero();
    assertThat(s.rows()).isZero();
    assertThat(read(s, 7)).isEqualTo(INIT);
    assertThat(s.update(new long[] {7}, ADD_ONE)).isEqualTo(1);
    assertThat(read(s, 7)).isEqualTo(INIT + 1);
    for (long id = 100; id < 1_100; id++) {
      s.update(new long[] {id}, ADD_ONE);
    }
    assertThat(s.rows()).isLessThan(20);
    assertThat(s.admissionsRefused()).isGreaterThan(2 + 980);
  }

  @Test
  void sharedBudget_capsTheTablesTogether_andClearGivesItBack() {
    SparseBudget budget = new SparseBudget(100 * (SparseRowStore.ROW_OVERHEAD_BYTES + 4 * 12));
    TableSettings settings =
        new TableSettings(
            Long.MAX_VALUE, budget, EvictionPolicy.lfu(Duration.ofHours(1)), 8, 1, 16);
    SparseRowStore a = store(settings);
    SparseRowStore b = store(settings);
    for (long id = 0; id < 500; id++) {
      a.update(new long[] {id}, ADD_ONE);
      b.update(new long[] {id}, ADD_ONE);
    }
    assertThat(a.rows() + b.rows()).isLessThanOrEqualTo(100);
    assertThat(budget.used()).isLessThanOrEqualTo(budget.maxBytes());
    a.clear();
    b.clear();
    assertThat(budget.used()).isZero();
  }

  @Test
  void snapshotThenPut_restoresACappedTableExactly() {
    SparseRowStore s = store(capped(300, EvictionPolicy.lfu(Duration.ofHours(1))));
    SplittableRandom random = new SplittableRandom(3);
    for (int i = 0; i < 5_000; i++) {
      long id = random.nextInt(2_000);
      s.update(new long[] {id}, (k, v, slots, before) -> v[0] += id + before);
    }
    SparseRowStore copy = store(capped(300, EvictionPolicy.lfu(Duration.ofHours(1))));
    List<Long> ids = new ArrayList<>();
    s.snapshot(
        64,
        c -> {
          assertThat(c.rows()).isLessThanOrEqualTo(64);
          for (int r = 0; r < c.rows(); r++) {
            ids.add(c.ids()[r]);
            float[][] slots = new float[2][];
            for (int k = 0; k < 2; k++) {
              slots[k] = Arrays.copyOfRange(c.slots()[k], r * WIDTH, (r + 1) * WIDTH);
            }
            copy.put(
                c.ids()[r],
                Arrays.copyOfRange(c.values(), r * WIDTH, (r + 1) * WIDTH),
                slots,
                c.updates()[r],
                c.scores()[r]);
          }
        });
    assertThat(ids).hasSize(300).doesNotHaveDuplicates();
    assertThat(copy.rows()).isEqualTo(300);
    // The LFU counts came along too: both tables score every row alike.
    assertThat(scoresById(copy)).isEqualTo(scoresById(s)).hasSize(300);
    assertThat(scoresById(s).values()).anyMatch(v -> v > 1);
    for (long id : ids) {
      float[] a = new float[WIDTH];
      float[] b = new float[WIDTH];
      s.read(id, a, 0);
      copy.read(id, b, 0);
      assertThat(b).containsExactly(a);
    }
    // The update counts came along: the next update sees the same count in both.
    long id = ids.get(0);
    long[] before = new long[2];
    s.update(new long[] {id}, (k, v, slots, n) -> before[0] = n);
    copy.update(new long[] {id}, (k, v, slots, n) -> before[1] = n);
    assertThat(before[1]).isEqualTo(before[0]).isPositive();
  }

  private static java.util.Map<Long, Long> scoresById(SparseRowStore store) {
    java.util.Map<Long, Long> out = new java.util.HashMap<>();
    store.snapshot(
        1 << 10,
        c -> {
          for (int r = 0; r < c.rows(); r++) {
            out.put(c.ids()[r], c.scores()[r]);
          }
        });
    return out;
  }

  /** Zipf-distributed ids: rank r (0 = hottest) has weight 1 / (r + 1)^s. */
  static final class Zipf {
    private final double[] cdf;
    private final SplittableRandom random;

    Zipf(int n, double s, long seed) {
      cdf = new double[n];
      double sum = 0;
      for (int r = 0; r < n; r++) {
        sum += 1 / Math.pow(r + 1, s);
        cdf[r] = sum;
      }
      for (int r = 0; r < n; r++) {
        cdf[r] /= sum;
      }
      random = new SplittableRandom(seed);
    }

    /** The id of rank {@code rank}: scattered so hot ids are not neighbours. */
    static long id(int rank) {
      return rank * 0x9E3779B97F4A7C15L >>> 1;
    }

    long next() {
      int r = Arrays.binarySearch(cdf, random.nextDouble());
      return id(r < 0 ? Math.min(cdf.length - 1, -r - 1) : r);
    }
  }
}
