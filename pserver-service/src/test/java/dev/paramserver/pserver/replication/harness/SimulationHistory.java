package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.TensorCodec;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The simulation's model and history (a Jepsen-style checker): every push has an identity (trainer,
 * step) that owns one coordinate of the parameter {@code id}, where it adds exactly 1 (SGD,
 * learning rate 1, zero init), so the final state tells how many times each push was applied; it
 * also adds small integers to {@code w}, whose final value must equal the model's (exact in
 * float32, whatever the order). Every invocation and outcome is recorded; {@link #check} counts
 * acknowledged pushes lost and pushes applied twice apart, and any value that differs from the
 * model.
 */
final class SimulationHistory {
  static final String ID = "id";
  static final String W = "w";
  static final int BLOCK = 8;
  static final int W_SIZE = 16;

  /** What happened to one attempt of a push. */
  enum Outcome {
    INVOKED,
    ACKNOWLEDGED,
    DUPLICATE,
    FAILED,
    ANSWER_LOST,
    GAVE_UP
  }

  record Event(long nanos, int trainer, int step, int attempt, Outcome outcome, String detail) {
    @Override
    public String toString() {
      // Locale.ROOT: the trace hash mixes this text in, the same in every JVM
      return String.format(
          Locale.ROOT,
          "%8.3f s t%d step %d #%d %s %s",
          nanos / 1e9,
          trainer,
          step,
          attempt,
          outcome,
          detail);
    }
  }

  /** The checker's verdict on the final state. */
  record Verdict(int acknowledged, int lost, int doubled, List<String> violations) {
    boolean ok() {
      return violations.isEmpty();
    }
  }

  private final int trainers;
  private final int pushes;
  private final long seed;
  private final List<Event> events = new ArrayList<>();

  SimulationHistory(int trainers, int pushes, long seed) {
    this.trainers = trainers;
    this.pushes = pushes;
    this.seed = seed;
  }

  synchronized void record(Event e) {
    events.add(e);
  }

  synchronized List<Event> events() {
    return List.copyOf(events);
  }

  private int ids() {
    int n = trainers * pushes;
    return (n + BLOCK - 1) / BLOCK * BLOCK;
  }

  /** Defines {@code id} and {@code w} at zero, with SGD at learning rate 1. */
  void initialise(ParameterShard shard) {
    OptimizerConfig sgd =
        OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(1f).build();
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder().setTrainerId("t0").setInitId(Trainers.INIT_ID);
    int blocks = 0;
    for (String name : List.of(ID, W)) {
      int size = name.equals(ID) ? ids() : W_SIZE;
      init.addParameters(
          ParameterSpec.newBuilder()
              .setName(name)
              .addShape(size)
              .setDtype(DataType.FLOAT32)
              .setBlockSize(BLOCK)
              .setOptimizer(sgd));
      for (int b = 0; b < size / BLOCK; b++, blocks++) {
        init.addBlocks(block(name, b, new float[BLOCK]).setOffset((long) b * BLOCK));
      }
    }
    shard.init(init.build());
    shard.finishInit(
        FinishInitRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId(Trainers.INIT_ID)
            .setExpectedBlocks(blocks)
            .build());
  }

  private static TensorBlock.Builder block(String name, int b, float[] values) {
    return TensorBlock.newBuilder()
        .setName(name)
        .setBlock(b)
        .setDtype(DataType.FLOAT32)
        .setData(TensorCodec.encode(values));
  }

  private int identity(int trainer, int step) {
    return trainer * pushes + step - 1;
  }

  /** The gradient {@code trainer} pushes at {@code step} (1-based) to {@code w}. */
  private float[] wGradient(int trainer, int step) {
    Random r = new Random(seed * 1_000_003L + identity(trainer, step));
    float[] g = new float[W_SIZE];
    for (int i = 0; i < W_SIZE; i++) {
      g[i] = r.nextInt(7) - 3;
    }
    return g;
  }

  /** The push of {@code trainer} at {@code step}: the same message on every attempt. */
  PushGradientsRequest push(int trainer, int step) {
    int k = identity(trainer, step);
    float[] one = new float[BLOCK];
    one[k % BLOCK] = 1f;
    float[] w = wGradient(trainer, step);
    PushGradientsRequest.Builder p =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t" + trainer)
            .setSession("s" + trainer)
            .setStep(step)
            .addGradients(block(ID, k / BLOCK, one));
    for (int b = 0; b < W_SIZE / BLOCK; b++) {
      float[] part = new float[BLOCK];
      System.arraycopy(w, b * BLOCK, part, 0, BLOCK);
      p.addGradients(block(W, b, part));
    }
    return p.build();
  }

  /** Checks the final state of the shard's server against the history. */
  synchronized Verdict check(ShardCheckpoint state) {
    float[] id = values(state, ID, ids());
    float[] w = values(state, W, W_SIZE);
    double[] model = new double[W_SIZE];
    List<String> violations = new ArrayList<>();
    int acknowledged = 0;
    int lost = 0;
    int doubled = 0;
    for (int t = 0; t < trainers; t++) {
      for (int s = 1; s <= pushes; s++) {
        int k = identity(t, s);
        int applied = Math.round(-id[k]);
        if (-id[k] != applied || applied < 0) {
          violations.add("t" + t + " step " + s + ": id value " + id[k] + " is no count");
          continue;
        }
        boolean acked = acknowledged(t, s);
        acknowledged += acked ? 1 : 0;
        if (acked && applied == 0) {
          lost++;
          violations.add("LOST: t" + t + " step " + s + " acknowledged, not applied");
        } else if (applied > 1) {
          doubled++;
          violations.add("DOUBLED: t" + t + " step " + s + " applied " + applied + " times");
        }
        float[] g = wGradient(t, s);
        for (int i = 0; i < W_SIZE; i++) {
          model[i] -= (double) applied * g[i];
        }
      }
    }
    for (int i = 0; i < W_SIZE; i++) {
      if (w[i] != (float) model[i]) {
        violations.add("VALUE: w[" + i + "] = " + w[i] + ", the model says " + model[i]);
      }
    }
    return new Verdict(acknowledged, lost, doubled, violations);
  }

  private boolean acknowledged(int trainer, int step) {
    return events.stream()
        .anyMatch(
            e ->
                e.trainer() == trainer
                    && e.step() == step
                    && (e.outcome() == Outcome.ACKNOWLEDGED || e.outcome() == Outcome.DUPLICATE));
  }

  private static float[] values(ShardCheckpoint state, String name, int size) {
    float[] out = new float[size];
    for (BlockCheckpoint b : state.getBlocksList()) {
      if (b.getName().equals(name)) {
        FloatBuffer f =
            b.getValues().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        f.get(out, b.getBlock() * BLOCK, Math.min(BLOCK, f.remaining()));
      }
    }
    return out;
  }
}
