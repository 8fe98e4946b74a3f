package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The move simulation's model and history: every push (trainer, step) owns one coordinate of the
 * dense parameter {@code id} (its blocks are placed, and moved, one by one) and {@value #ROWS} rows
 * of the sparse table {@code emb} (their slots spread over the pservers, and move), where it adds
 * exactly 1 per application (row {@code j} adds {@code j + 1}; SGD, learning rate 1, zero init). So
 * the final state of the owners by the committed map tells how many times each push's every piece
 * was applied, wherever it was applied and whatever moved since. {@link #check} counts acknowledged
 * pushes lost and pushes applied twice apart.
 */
final class MoveHistory {
  static final String ID = "id";
  static final String EMB = "emb";
  static final int BLOCK = 64;
  static final int WIDTH = 2;
  static final int ROWS = 3;
  static final String INIT_ID = "move-sim-1";

  /** What happened to one attempt of a piece of a push, or to the push. */
  enum Outcome {
    INVOKED,
    ACKNOWLEDGED,
    DUPLICATE,
    MOVED,
    FAILED,
    ANSWER_LOST,
    GAVE_UP,
    /** Every piece of the push was acknowledged (or answered as a duplicate). */
    PUSH_ACKNOWLEDGED
  }

  record Event(long nanos, int trainer, int step, Outcome outcome, String detail) {
    @Override
    public String toString() {
      return String.format(
          Locale.ROOT, "%8.3f s t%d step %d %s %s", nanos / 1e9, trainer, step, outcome, detail);
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
  private final List<Event> events = new ArrayList<>();
  private final Set<Integer> acknowledged = new HashSet<>();

  MoveHistory(int trainers, int pushes) {
    this.trainers = trainers;
    this.pushes = pushes;
  }

  synchronized void record(Event e) {
    events.add(e);
    if (e.outcome() == Outcome.PUSH_ACKNOWLEDGED) {
      acknowledged.add(identity(e.trainer(), e.step()));
    }
  }

  synchronized List<Event> events() {
    return List.copyOf(events);
  }

  int ids() {
    int n = trainers * pushes;
    return (n + BLOCK - 1) / BLOCK * BLOCK;
  }

  /** The blocks of {@code id}, as the placement places them. */
  List<BlockSpec> blocks() {
    List<BlockSpec> out = new ArrayList<>();
    for (int b = 0; b < ids() / BLOCK; b++) {
      out.add(new BlockSpec(ID, b, (long) b * BLOCK, BLOCK));
    }
    return out;
  }

  int identity(int trainer, int step) {
    return trainer * pushes + step - 1;
  }

  static long row(int identity, int j) {
    return (long) identity * ROWS + j;
  }

  /**
   * Initialises pserver {@code index} of the initial map {@code initial}: both parameters (SGD,
   * learning rate 1), and the blocks of {@code id} that map gives it, at zero.
   */
  void initialise(ParameterShard shard, SlotMap initial, int index) {
    OptimizerConfig sgd =
        OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(1f).build();
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId(INIT_ID)
            .addParameters(
                ParameterSpec.newBuilder()
                    .setName(ID)
                    .addShape(ids())
                    .setDtype(DataType.FLOAT32)
                    .setBlockSize(BLOCK)
                    .setOptimizer(sgd))
            .addParameters(
                ParameterSpec.newBuilder()
                    .setName(EMB)
                    .addShape(0)
                    .addShape(WIDTH)
                    .setDtype(DataType.FLOAT32)
                    .setSparse(true)
                    .setOptimizer(sgd));
    int mine = 0;
    for (BlockSpec b : blocks()) {
      if (initial.ownerOfBlock(ID, b.block()) == index) {
        init.addBlocks(
            TensorBlock.newBuilder()
                .setName(ID)
                .setBlock(b.block())
                .setOffset(b.offset())
                .setDtype(DataType.FLOAT32)
                .setData(TensorCodec.encode(new float[BLOCK])));
        mine++;
      }
    }
    shard.init(init.build());
    shard.finishInit(
        FinishInitRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId(INIT_ID)
            .setExpectedBlocks(mine)
            .build());
  }

  /** The whole push of {@code trainer} at {@code step}: its coordinate of {@code id}, its rows. */
  MovePiece push(int trainer, int step) {
    int k = identity(trainer, step);
    TreeMap<Integer, float[]> dense = new TreeMap<>();
    float[] one = new float[BLOCK];
    one[k % BLOCK] = 1f;
    dense.put(k / BLOCK, one);
    TreeMap<Long, float[]> rows = new TreeMap<>();
    for (int j = 0; j < ROWS; j++) {
      rows.put(row(k, j), new float[] {j + 1, j + 1});
    }
    return new MovePiece(step, 0, 0, List.of(), dense, rows);
  }

  /**
   * Checks the final state: {@code states} are the shards of the pservers serving each index of
   * {@code map} (the committed map), by index.
   */
  synchronized Verdict check(SlotMap map, Map<Integer, ShardCheckpoint> states) {
    List<String> violations = new ArrayList<>();
    Map<Integer, float[]> dense = new TreeMap<>();
    Map<Integer, Map<Long, float[]>> rows = new TreeMap<>();
    states.forEach(
        (i, s) -> {
          dense.put(i, values(s));
          rows.put(i, rows(s));
        });
    long table = ShardPlacement.tableHash(EMB);
    int acked = 0;
    int lost = 0;
    int doubled = 0;
    for (int t = 0; t < trainers; t++) {
      for (int s = 1; s <= pushes; s++) {
        int k = identity(t, s);
        List<Integer> counts = new ArrayList<>();
        int owner = map.ownerOfBlock(ID, k / BLOCK);
        float[] d = dense.get(owner);
        counts.add(d == null ? -1 : count(-d[k], 1));
        for (int j = 0; j < ROWS; j++) {
          long id = row(k, j);
          Map<Long, float[]> held = rows.get(map.ownerOfRow(table, id));
          float[] v = held == null ? null : held.getOrDefault(id, new float[WIDTH]);
          counts.add(v == null || v[0] != v[1] ? -1 : count(-v[0], j + 1));
        }
        boolean isAcked = acknowledged.contains(k);
        acked += isAcked ? 1 : 0;
        String what = "t" + t + " step " + s + " (counts " + counts + ")";
        if (counts.contains(-1)) {
          violations.add("VALUE: " + what + ": a value is no count, or its owner serves nothing");
        } else if (isAcked && counts.contains(0)) {
          lost++;
          violations.add("LOST: " + what + " acknowledged, a piece not applied");
        } else if (counts.stream().anyMatch(c -> c > 1)) {
          doubled++;
          violations.add("DOUBLED: " + what + " applied more than once");
        }
      }
    }
    return new Verdict(acked, lost, doubled, violations);
  }

  /** {@code value} as a number of applications of {@code unit}, or -1. */
  private static int count(float value, int unit) {
    float n = value / unit;
    return n == Math.round(n) && n >= 0 ? Math.round(n) : -1;
  }

  private float[] values(ShardCheckpoint state) {
    float[] out = new float[ids()];
    for (BlockCheckpoint b : state.getBlocksList()) {
      if (b.getName().equals(ID)) {
        FloatBuffer f =
            b.getValues().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        f.get(out, b.getBlock() * BLOCK, Math.min(BLOCK, f.remaining()));
      }
    }
    return out;
  }

  private static Map<Long, float[]> rows(ShardCheckpoint state) {
    Map<Long, float[]> out = new TreeMap<>();
    for (SparseTableCheckpoint t : state.getSparseTablesList()) {
      if (t.getName().equals(EMB)) {
        FloatBuffer f =
            t.getValues().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        for (long id : t.getRowIdsList()) {
          float[] v = new float[WIDTH];
          f.get(v);
          out.put(id, v);
        }
      }
    }
    return out;
  }
}
