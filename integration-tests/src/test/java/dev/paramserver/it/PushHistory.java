package dev.paramserver.it;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.tensor.ShardPlacement;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The history of one scripted client's pushes to one shard, checked push by push (as Jepsen checks
 * a history): every attempt of every push identity (step, part) is recorded with its outcome
 * (acknowledged, acknowledged as a duplicate, an error status, no answer in time), and each push
 * carries, besides {@link ScriptedPushes}' dense gradient, a gradient of {@code -1} on a sparse row
 * of its own in table {@value #TABLE} (width 1, rows start at 0, SGD with learning rate 1). A row's
 * final value is therefore the number of times its push was applied, exactly in float32.
 *
 * <p>The verdict of an identity: acknowledged (by any attempt) and applied once is right; applied 0
 * times is <em>lost</em>, 2 or more <em>doubled</em>. An identity never acknowledged (its attempts
 * failed or timed out and the client stopped) may have been applied once or not, never twice. Lost
 * and doubled are counted apart, so one of each cannot net out as totals do.
 *
 * <p>Thread-safety: one client thread records; {@link #check} runs after it stopped.
 */
final class PushHistory {
  /** The sparse table whose rows count each push's applications. */
  static final String TABLE = "soak.history";

  /** Rows pulled per request at the end. */
  private static final int PULL_BATCH = 4096;

  private static final int SHOWN = 10;

  /** How one attempt of a push ended. */
  enum Outcome {
    ACKNOWLEDGED,
    DUPLICATE,
    ERROR,
    NO_ANSWER
  }

  /** What is known of one push identity. */
  private static final class Push {
    final long step;
    final int part;
    final long row;
    final List<String> attempts = new ArrayList<>(1);
    long firstSentNanos;
    long acknowledgedNanos = -1;

    Push(long step, int part, long row) {
      this.step = step;
      this.part = part;
      this.row = row;
    }

    boolean acknowledged() {
      return acknowledgedNanos >= 0;
    }
  }

  /**
   * The checked history of one shard.
   *
   * @param pushes identities sent
   * @param acknowledged identities acknowledged by some attempt
   * @param answeredDuplicate identities whose acknowledgement said duplicate (a retry of an applied
   *     push)
   * @param retried identities sent more than once
   * @param unanswered identities never acknowledged
   * @param unansweredApplied of those, applied once (allowed)
   * @param lost acknowledged and never applied
   * @param doubled applied twice or more
   * @param examples the first lost or doubled identities with their attempts
   */
  record Verdict(
      long pushes,
      long acknowledged,
      long answeredDuplicate,
      long retried,
      long unanswered,
      long unansweredApplied,
      long lost,
      long doubled,
      List<String> examples) {}

  private final int shard;
  private final int shards;
  private final long tableHash = ShardPlacement.tableHash(TABLE);
  private final long startNanos;
  // row of push k = (step - 1) * PARTS + part: the k-th row that shard owns, found once
  private final List<Long> rows = new ArrayList<>();
  private long nextCandidate;
  private final Map<Long, Push> pushes = new LinkedHashMap<>();

  PushHistory(int shard, int shards, long startNanos) {
    this.shard = shard;
    this.shards = shards;
    this.startNanos = startNanos;
  }

  /** {@code init} with the history table defined. */
  static InitParametersRequest withTable(InitParametersRequest init) {
    return init.toBuilder()
        .addParameters(
            ParameterSpec.newBuilder()
                .setName(TABLE)
                .addShape(0)
                .addShape(1)
                .setDtype(DataType.FLOAT32)
                .setSparse(true)
                .setOptimizer(
                    OptimizerConfig.newBuilder()
                        .setKind(OptimizerConfig.Kind.SGD)
                        .setLearningRate(1f)))
        .build();
  }

  /** The row of (step, part): one of this shard's, never another push's. */
  long rowOf(long step, int part) {
    int k = Math.toIntExact((step - 1) * ScriptedPushes.PARTS + part);
    while (rows.size() <= k) {
      long candidate = nextCandidate++;
      if (ShardPlacement.ownerOfRow(tableHash, candidate, shards) == shard) {
        rows.add(candidate);
      }
    }
    return rows.get(k);
  }

  /** (step, part)'s request: {@link ScriptedPushes#push} plus its own history row. */
  PushGradientsRequest push(long step, int part) {
    ByteBuffer minusOne = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(-1f);
    minusOne.flip();
    return ScriptedPushes.push(step, part).toBuilder()
        .addSparseGradients(
            SparseRows.newBuilder()
                .setName(TABLE)
                .addRowIds(rowOf(step, part))
                .setDtype(DataType.FLOAT32)
                .setData(ByteString.copyFrom(minusOne)))
        .build();
  }

  /** Records one attempt of (step, part) sent at {@code sentNanos} and ended now. */
  void attempt(long step, int part, long sentNanos, Outcome outcome, String detail) {
    long key = (step - 1) * ScriptedPushes.PARTS + part;
    Push p = pushes.get(key);
    if (p == null) {
      p = new Push(step, part, rowOf(step, part));
      p.firstSentNanos = sentNanos;
      pushes.put(key, p);
    }
    long now = System.nanoTime();
    String what =
        outcome == Outcome.ERROR || outcome == Outcome.NO_ANSWER ? detail : outcome.name();
    p.attempts.add(String.format(Locale.ROOT, "%s@%s", what, seconds(now)));
    if ((outcome == Outcome.ACKNOWLEDGED || outcome == Outcome.DUPLICATE) && !p.acknowledged()) {
      p.acknowledgedNanos = now;
    }
  }

  /** The pulls that read every sent push's row, in batches. */
  List<PullParametersRequest> pulls() {
    List<PullParametersRequest> out = new ArrayList<>();
    List<Long> ids = new ArrayList<>();
    for (Push p : pushes.values()) {
      ids.add(p.row);
      if (ids.size() == PULL_BATCH) {
        out.add(pull(ids));
        ids.clear();
      }
    }
    if (!ids.isEmpty()) {
      out.add(pull(ids));
    }
    return out;
  }

  private static PullParametersRequest pull(List<Long> ids) {
    return PullParametersRequest.newBuilder()
        .addSparseRows(SparseRowsRef.newBuilder().setName(TABLE).addAllRowIds(ids))
        .build();
  }

  /** Each row's value in {@code responses} (to {@link #pulls()}). */
  static Map<Long, Float> rowValues(List<PullParametersResponse> responses) {
    Map<Long, Float> values = new HashMap<>();
    for (PullParametersResponse r : responses) {
      for (SparseRows rows : r.getSparseRowsList()) {
        ByteBuffer buf = rows.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        for (long id : rows.getRowIdsList()) {
          values.put(id, buf.getFloat());
        }
      }
    }
    return values;
  }

  /** Checks every identity against its row's value (the number of times it was applied). */
  Verdict check(Map<Long, Float> values) {
    long acknowledged = 0;
    long duplicate = 0;
    long retried = 0;
    long unanswered = 0;
    long unansweredApplied = 0;
    long lost = 0;
    long doubled = 0;
    List<String> examples = new ArrayList<>();
    for (Push p : pushes.values()) {
      Float v = values.get(p.row);
      float applied = v == null ? 0f : v; // a row never created reads as 0
      boolean acked = p.acknowledged();
      acknowledged += acked ? 1 : 0;
      unanswered += acked ? 0 : 1;
      retried += p.attempts.size() > 1 ? 1 : 0;
      duplicate += p.attempts.stream().anyMatch(a -> a.startsWith("DUPLICATE")) ? 1 : 0;
      String problem = null;
      if (applied != 0f && applied != 1f) {
        doubled++;
        problem = "doubled";
      } else if (acked && applied == 0f) {
        lost++;
        problem = "lost";
      } else if (!acked && applied == 1f) {
        unansweredApplied++;
      }
      if (problem != null && examples.size() < SHOWN) {
        examples.add(
            String.format(
                Locale.ROOT,
                "%s: shard %d step %d part %d (row %d applied %s times) first sent %s, attempts %s",
                problem,
                shard,
                p.step,
                p.part,
                p.row,
                applied,
                seconds(p.firstSentNanos),
                p.attempts));
      }
    }
    return new Verdict(
        pushes.size(),
        acknowledged,
        duplicate,
        retried,
        unanswered,
        unansweredApplied,
        lost,
        doubled,
        List.copyOf(examples));
  }

  /**
   * The acknowledged pushes grouped by {@code groupOfRow} (for example the row's owners before and
   * after the moves), each group with its lost count and the send times of its first and last lost
   * and kept push: tells a slot that lost its content up to some instant (a copy or a log that went
   * missing) from scattered losses.
   */
  String lostByGroup(Map<Long, Float> values, java.util.function.LongFunction<String> groupOfRow) {
    Map<String, long[]> groups =
        new java.util.TreeMap<>(); // lost, kept, lost first/last, kept first/last
    for (Push p : pushes.values()) {
      if (!p.acknowledged()) {
        continue;
      }
      Float v = values.get(p.row);
      boolean lost = v == null || v == 0f;
      long[] g =
          groups.computeIfAbsent(
              groupOfRow.apply(p.row),
              k ->
                  new long[] {
                    0, 0, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE
                  });
      int at = lost ? 2 : 4;
      g[lost ? 0 : 1]++;
      g[at] = Math.min(g[at], p.firstSentNanos);
      g[at + 1] = Math.max(g[at + 1], p.firstSentNanos);
    }
    StringBuilder out = new StringBuilder();
    groups.forEach(
        (k, g) ->
            out.append(
                String.format(
                    Locale.ROOT,
                    "%n  %s: lost %d (sent %s..%s), kept %d (sent %s..%s)",
                    k,
                    g[0],
                    g[0] == 0 ? "-" : seconds(g[2]),
                    g[0] == 0 ? "-" : seconds(g[3]),
                    g[1],
                    g[1] == 0 ? "-" : seconds(g[4]),
                    g[1] == 0 ? "-" : seconds(g[5]))));
    return out.toString();
  }

  /** {@code nanos} as seconds since the soak began, {@code +12.3s}. */
  String seconds(long nanos) {
    return String.format(Locale.ROOT, "+%.1fs", (nanos - startNanos) / 1e9);
  }

  /** The per-shard report line of {@code v}. */
  static String report(int shard, Verdict v, long seed) {
    return String.format(
        Locale.ROOT,
        "SOAK shard %d history: pushes=%d acknowledged=%d answered_duplicate=%d retried=%d"
            + " unanswered=%d (applied %d) lost=%d doubled=%d seed=%d",
        shard,
        v.pushes(),
        v.acknowledged(),
        v.answeredDuplicate(),
        v.retried(),
        v.unanswered(),
        v.unansweredApplied(),
        v.lost(),
        v.doubled(),
        seed);
  }
}
