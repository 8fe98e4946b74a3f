package dev.paramserver.serving.replica;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.TensorCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Reads while records are applied: each record adds 1 to every row of a table (SGD, learning rate
 * 1, gradient -1, rows starting at 0), so a read that saw part of a record would find rows that
 * differ, and a read on version {@code v} finds every row equal to the records {@code v} holds.
 */
class ConcurrentReadsTest {
  private static final int ROWS = 200;
  private static final int WIDTH = 4;
  private static final int RECORDS = 1_000;

  private final ParameterShard primary = new ParameterShard(true);
  private final long[] ids = new long[ROWS];
  private PushGradientsRequest push;

  /** A primary with rows 0..ROWS-1 at 1 (one push), and a model of one shard holding its copy. */
  private ServedModel followed() {
    ParameterSpec spec =
        ParameterSpec.newBuilder()
            .setName("emb")
            .addShape(ROWS)
            .addShape(WIDTH)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setOptimizer(
                OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(1f))
            .build();
    primary.init(
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId("i1")
            .addParameters(spec)
            .build());
    primary.finishInit(FinishInitRequest.newBuilder().setTrainerId("t0").setInitId("i1").build());
    for (int i = 0; i < ROWS; i++) {
      ids[i] = i;
    }
    float[] minusOne = new float[ROWS * WIDTH];
    java.util.Arrays.fill(minusOne, -1f);
    push =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t0")
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName("emb")
                    .addAllRowIds(java.util.Arrays.stream(ids).boxed().toList())
                    .setDtype(DataType.FLOAT32)
                    .setData(TensorCodec.encode(minusOne)))
            .build();
    // the first push creates the rows at 0 + 1; the copy is cut after it
    primary.push(push);
    ServedModel model = new ServedModel("r", 1);
    model.install(0, 7, primary.snapshot());
    return model;
  }

  @Test
  @Timeout(120)
  void lookups_underConcurrentApplies_seeWholeRecordsOnly_andTheVersionTheyName() throws Exception {
    ServedModel model = followed();
    long base = model.position(0).sequence();
    Lookups lookups = new Lookups(model, ROWS, Duration.ZERO);
    WalRecord record = WalRecord.newBuilder().addPushes(push).setInitId("i1").build();

    AtomicBoolean applying = new AtomicBoolean(true);
    ExecutorService readers = Executors.newFixedThreadPool(2);
    List<Future<Long>> reads = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      reads.add(
          readers.submit(
              () -> {
                long n = 0;
                long lastSeen = 0;
                while (applying.get() || n == 0) {
                  Lookups.Rows rows =
                      lookups.lookup("emb", ids, WIDTH, ServedVersion.Minimum.ANY, Duration.ZERO);
                  long seq = rows.version().shards().get(0).sequence();
                  float expected = seq - base + 1;
                  for (int i = 0; i < rows.values().length; i++) {
                    if (rows.values()[i] != expected) {
                      throw new AssertionError(
                          "version at sequence "
                              + seq
                              + " read value "
                              + rows.values()[i]
                              + " at "
                              + i
                              + ", expected "
                              + expected
                              + " everywhere");
                    }
                  }
                  assertThat(rows.version().number()).isGreaterThanOrEqualTo(lastSeen);
                  lastSeen = rows.version().number();
                  n++;
                }
                return n;
              }));
    }
    try {
      for (long seq = base + 1; seq <= base + RECORDS; seq++) {
        assertThat(model.apply(0, 7, seq, record)).as("record %d", seq).isTrue();
      }
    } finally {
      applying.set(false);
    }
    long total = 0;
    for (Future<Long> f : reads) {
      total += f.get(60, TimeUnit.SECONDS);
    }
    readers.shutdownNow();
    assertThat(total).isPositive();
    Lookups.Rows last = lookups.lookup("emb", ids, WIDTH, ServedVersion.Minimum.ANY, Duration.ZERO);
    assertThat(last.version().shards().get(0).sequence()).isEqualTo(base + RECORDS);
    assertThat(last.values()[0]).isEqualTo(RECORDS + 1f);
  }

  @Test
  @Timeout(60)
  void aRead_doesNotWaitForARecordBeingApplied() throws Exception {
    ServedModel model = followed();
    long base = model.position(0).sequence();
    WalRecord record = WalRecord.newBuilder().addPushes(push).setInitId("i1").build();
    Lookups lookups = new Lookups(model, ROWS, Duration.ZERO);
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      // a slow read holds the first version
      Future<ServedVersion> slow =
          threads.submit(
              () ->
                  model.read(
                      ServedVersion.Minimum.ANY,
                      Duration.ZERO,
                      view -> {
                        inside.countDown();
                        await(release);
                        return view.version();
                      }));
      assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
      // the record's version is published at once: the copy the slow read uses is not touched
      assertThat(model.apply(0, 7, base + 1, record)).isTrue();
      assertThat(model.position(0).sequence()).isEqualTo(base + 1);
      // reads go on, on the new version, without waiting
      Lookups.Rows rows =
          lookups.lookup("emb", ids, WIDTH, ServedVersion.Minimum.ANY, Duration.ZERO);
      assertThat(rows.version().shards().get(0).sequence()).isEqualTo(base + 1);
      assertThat(rows.values()).containsOnly(2f);
      // the next record is applied to the copy the slow read uses: it waits for that read
      Future<Boolean> next = threads.submit(() -> model.apply(0, 7, base + 2, record));
      assertThatThrownBy(() -> next.get(200, TimeUnit.MILLISECONDS))
          .as("the next record waits for the slow read")
          .isInstanceOf(TimeoutException.class);
      release.countDown();
      assertThat(next.get(30, TimeUnit.SECONDS)).isTrue();
      assertThat(slow.get(30, TimeUnit.SECONDS).shards().get(0).sequence()).isEqualTo(base);
      assertThat(
              lookups.lookup("emb", ids, WIDTH, ServedVersion.Minimum.ANY, Duration.ZERO).values())
          .containsOnly(3f);
    } finally {
      release.countDown();
      threads.shutdownNow();
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(30, TimeUnit.SECONDS)) {
        throw new AssertionError("not released in 30 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
