package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.AsyncPushes;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * The model every harness run trains, with Adam (whose result depends on the order of its updates),
 * and trainers that push to a primary's shard concurrently.
 */
public final class Trainers {
  public static final String INIT_ID = "harness-init";
  static final String DENSE = "w";
  static final String SPARSE = "emb";
  static final int BLOCK = 8;
  static final int DENSE_BLOCKS = 3;
  static final int WIDTH = 4;

  /** Sparse row ids are drawn from this few, so that trainers collide on rows. */
  static final int ROW_IDS = 6;

  private Trainers() {}

  static OptimizerConfig adam() {
    return OptimizerConfig.newBuilder()
        .setKind(OptimizerConfig.Kind.ADAM)
        .setLearningRate(0.05f)
        .setBeta1(0.9f)
        .setBeta2(0.99f)
        .setEpsilon(1e-6f)
        .build();
  }

  /** Defines and initialises the model on {@code shard}, as the initialising trainer does. */
  public static void initialise(ParameterShard shard) {
    ParameterSpec dense =
        ParameterSpec.newBuilder()
            .setName(DENSE)
            .addShape(BLOCK * DENSE_BLOCKS)
            .setDtype(DataType.FLOAT32)
            .setBlockSize(BLOCK)
            .setOptimizer(adam())
            .build();
    ParameterSpec sparse =
        ParameterSpec.newBuilder()
            .setName(SPARSE)
            .addShape(0)
            .addShape(WIDTH)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setInitStddev(0.1f)
            .setOptimizer(adam())
            .build();
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId(INIT_ID)
            .addParameters(dense)
            .addParameters(sparse);
    Random r = new Random(7);
    for (int b = 0; b < DENSE_BLOCKS; b++) {
      init.addBlocks(
          TensorBlock.newBuilder()
              .setName(DENSE)
              .setBlock(b)
              .setOffset((long) b * BLOCK)
              .setDtype(DataType.FLOAT32)
              .setData(TensorCodec.encode(gaussian(r, BLOCK))));
    }
    shard.init(init.build());
    shard.finishInit(
        FinishInitRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId(INIT_ID)
            .setExpectedBlocks(DENSE_BLOCKS)
            .build());
  }

  /**
   * The push of {@code trainer} at {@code step}: a function of the seed, so a failing run can be
   * read again. Touches one to all dense blocks and one to three sparse rows.
   */
  public static PushGradientsRequest push(long seed, int trainer, long step) {
    Random r = new Random(seed * 1_000_003L + trainer * 10_007L + step);
    PushGradientsRequest.Builder p =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t" + trainer)
            .setSession("s" + trainer)
            .setStep(step);
    int first = r.nextInt(DENSE_BLOCKS);
    int count = 1 + r.nextInt(DENSE_BLOCKS - first);
    for (int b = first; b < first + count; b++) {
      p.addGradients(
          TensorBlock.newBuilder()
              .setName(DENSE)
              .setBlock(b)
              .setDtype(DataType.FLOAT32)
              .setData(TensorCodec.encode(gaussian(r, BLOCK))));
    }
    List<Long> ids = new ArrayList<>();
    int rows = 1 + r.nextInt(3);
    while (ids.size() < rows) {
      long id = r.nextInt(ROW_IDS);
      if (!ids.contains(id)) {
        ids.add(id);
      }
    }
    p.addSparseGradients(
        SparseRows.newBuilder()
            .setName(SPARSE)
            .addAllRowIds(ids)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(gaussian(r, rows * WIDTH))));
    return p.build();
  }

  private static float[] gaussian(Random r, int n) {
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      out[i] = (float) r.nextGaussian();
    }
    return out;
  }

  /** What the trainers saw: pushes that failed, retries not answered as duplicates. */
  record Outcome(List<String> failures) {}

  /**
   * Runs {@code schedule}'s trainers against {@code shard}: they start together and push steps
   * {@code fromStep..fromStep + pushes - 1}; {@code afterPush} is told the count of pushes done
   * after each one (the harness registers the backup at a count).
   */
  static Outcome run(ParameterShard shard, Schedule schedule, long fromStep, IntConsumer afterPush)
      throws InterruptedException {
    ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    ExecutorService blocking = Executors.newCachedThreadPool();
    AtomicInteger done = new AtomicInteger();
    CyclicBarrier start = new CyclicBarrier(schedule.trainers());
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < schedule.trainers(); t++) {
      int trainer = t;
      Thread thread =
          new Thread(
              () -> {
                try {
                  start.await(10, TimeUnit.SECONDS);
                  for (int i = 0; i < schedule.pushes(); i++) {
                    long step = fromStep + i;
                    PushGradientsRequest push = push(schedule.seed(), trainer, step);
                    if (push(shard, push, trainer % 2 == 1, blocking).duplicate()) {
                      failures.add("t" + trainer + " step " + step + " answered as a duplicate");
                    }
                    if (schedule.retryEvery() > 0 && (i + 1) % schedule.retryEvery() == 0) {
                      if (!push(shard, push, trainer % 2 == 1, blocking).duplicate()) {
                        failures.add("retry of t" + trainer + " step " + step + " applied twice");
                      }
                    }
                    afterPush.accept(done.incrementAndGet());
                  }
                } catch (Exception e) {
                  failures.add("t" + trainer + ": " + e);
                }
              },
              "harness-trainer-" + t);
      thread.setDaemon(true);
      threads.add(thread);
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join(30_000);
      if (thread.isAlive()) {
        failures.add(thread.getName() + " did not finish within 30 s");
        thread.interrupt();
      }
    }
    blocking.shutdownNow();
    return new Outcome(List.copyOf(failures));
  }

  /**
   * Odd trainers push as the gRPC service does with a backup attached ({@link
   * AsyncPushes#pushOutcome}: applied on the caller's thread, answered by the backup's
   * acknowledgement), even ones as a blocking thread does ({@link ParameterShard#pushOutcome}).
   */
  private static PushOutcome push(
      ParameterShard shard, PushGradientsRequest push, boolean async, ExecutorService blocking)
      throws Exception {
    if (!async) {
      return shard.pushOutcome(push);
    }
    try {
      return AsyncPushes.pushOutcome(shard, push, blocking).get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException cause) {
        throw cause;
      }
      throw e;
    }
  }
}
