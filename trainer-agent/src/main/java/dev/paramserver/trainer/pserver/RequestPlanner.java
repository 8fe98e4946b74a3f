package dev.paramserver.trainer.pserver;

import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

/**
 * Cuts pushes, pulls and initialisation into requests, one pserver each, as the layout places the
 * blocks and rows. No request carries more than {@link #MAX_REQUEST_BYTES} of dense tensor data,
 * except in synchronous mode, where each pserver gets exactly one push per step (possibly empty: an
 * idle trainer's contribution), because the barrier counts one push per trainer.
 */
public final class RequestPlanner {
  /** Largest tensor payload of one request, well under gRPC's 4 MiB default cap. */
  public static final int MAX_REQUEST_BYTES = 2 * 1024 * 1024;

  /** A request and the pserver it goes to. */
  public record Planned<R>(int pserver, R request) {}

  private final ModelLayout layout;
  private final String trainerId;
  private final DataType gradientType;
  private final boolean sync;
  private final TrainingMode mode;
  private final int staleness;
  // Identifies this run of the trainer in its pushes (see ParameterServer.PushGradients).
  private final String session;

  public RequestPlanner(ModelLayout layout, String trainerId, DataType gradientType, boolean sync) {
    this(layout, trainerId, gradientType, sync ? TrainingMode.SYNC : TrainingMode.ASYNC, 0);
  }

  /**
   * @param mode how the pservers combine gradients (sent with the initialisation)
   * @param staleness BOUNDED_STALENESS: pushes a trainer may run ahead of the slowest
   */
  public RequestPlanner(
      ModelLayout layout,
      String trainerId,
      DataType gradientType,
      TrainingMode mode,
      int staleness) {
    this(layout, trainerId, UUID.randomUUID().toString(), gradientType, mode, staleness);
  }

  /**
   * @param session identifies this run of the trainer in its pushes (the session it joined with)
   */
  public RequestPlanner(
      ModelLayout layout,
      String trainerId,
      String session,
      DataType gradientType,
      TrainingMode mode,
      int staleness) {
    this.session = session;
    this.layout = layout;
    this.trainerId = trainerId;
    this.gradientType = gradientType;
    this.mode = mode;
    this.sync = mode == TrainingMode.SYNC;
    this.staleness = mode == TrainingMode.BOUNDED_STALENESS ? staleness : 0;
  }

  public ModelLayout layout() {
    return layout;
  }

  public String trainerId() {
    return trainerId;
  }

  public TrainingMode mode() {
    return mode;
  }

  /** Groups blocks into request-sized runs. */
  static List<List<BlockSpec>> groups(List<BlockSpec> blocks) {
    List<List<BlockSpec>> out = new ArrayList<>();
    List<BlockSpec> cur = new ArrayList<>();
    long bytes = 0;
    for (BlockSpec b : blocks) {
      if (!cur.isEmpty() && bytes + b.bytes() > MAX_REQUEST_BYTES) {
        out.add(cur);
        cur = new ArrayList<>();
        bytes = 0;
      }
      cur.add(b);
      bytes += b.bytes();
    }
    if (!cur.isEmpty()) {
      out.add(cur);
    }
    return out;
  }

  /**
   * The pushes of gradient {@code grads} at {@code step}, dense blocks and sparse rows. Each push
   * carries this planner's session and its part number among the step's requests to its pserver, so
   * that, with the trainer id and the step, it identifies the push.
   */
  public List<Planned<PushGradientsRequest>> pushes(Parameters grads, long step) {
    return pushes(grads, step, false);
  }

  /**
   * As {@link #pushes(Parameters, long)}; with {@code returnValues} (asynchronous mode only) each
   * dense part asks for the values of its blocks in the answer, so that the parts together carry
   * what {@link #pulls()} would pull.
   */
  public List<Planned<PushGradientsRequest>> pushes(
      Parameters grads, long step, boolean returnValues) {
    Map<Integer, PushGradientsRequest.Builder> sparse = sparsePushes(grads, step);
    List<Planned<PushGradientsRequest>> out = new ArrayList<>();
    for (int ps = 0; ps < layout.pservers(); ps++) {
      List<List<BlockSpec>> groups = groups(layout.blocksOf(ps));
      PushGradientsRequest.Builder rows = sparse.get(ps);
      if (sync) {
        PushGradientsRequest.Builder one = newPush(step);
        groups.forEach(g -> addBlocks(one, g, grads));
        if (rows != null) {
          one.addAllSparseGradients(rows.getSparseGradientsList());
        }
        out.add(new Planned<>(ps, one.build()));
        continue;
      }
      int part = 0;
      for (List<BlockSpec> group : groups) {
        PushGradientsRequest.Builder push = addBlocks(newPush(step), group, grads);
        out.add(new Planned<>(ps, push.setPart(part++).setReturnValues(returnValues).build()));
      }
      if (rows != null) {
        out.add(new Planned<>(ps, rows.setPart(part).build()));
      }
    }
    return out;
  }

  /**
   * One push without gradients per pserver, as step {@code step}. In bounded-staleness mode a
   * trainer without a task keeps pace this way, so it does not hold back the trainers that have one
   * (the pservers bound each trainer's pushes by the slowest live trainer's).
   */
  public List<Planned<PushGradientsRequest>> emptyPushes(long step) {
    List<Planned<PushGradientsRequest>> out = new ArrayList<>();
    for (int ps = 0; ps < layout.pservers(); ps++) {
      out.add(new Planned<>(ps, newPush(step).build()));
    }
    return out;
  }

  private PushGradientsRequest.Builder newPush(long step) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainerId)
        .setSession(session)
        .setStep(step);
  }

  private PushGradientsRequest.Builder addBlocks(
      PushGradientsRequest.Builder req, List<BlockSpec> group, Parameters grads) {
    for (BlockSpec b : group) {
      req.addGradients(block(b, grads, gradientType));
    }
    return req;
  }

  private static TensorBlock block(BlockSpec b, Parameters values, DataType type) {
    return TensorBlock.newBuilder()
        .setName(b.name())
        .setBlock(b.block())
        .setOffset(b.offset())
        .setDtype(type)
        .setData(TensorCodec.encode(values.dense(b.name()), (int) b.offset(), b.length(), type))
        .build();
  }

  /** The sparse-row gradients of {@code grads}, one request per owning pserver. */
  private Map<Integer, PushGradientsRequest.Builder> sparsePushes(Parameters grads, long step) {
    Map<Integer, PushGradientsRequest.Builder> reqs = new TreeMap<>();
    for (ParameterDef def : layout.sparseTables()) {
      Parameters.SparseTable table = grads.sparse(def.name());
      int width = table.width();
      for (Map.Entry<Integer, Set<Long>> e : byOwner(def, table.rows().keySet()).entrySet()) {
        float[] data = new float[e.getValue().size() * width];
        int i = 0;
        for (long id : e.getValue()) {
          System.arraycopy(table.rows().get(id), 0, data, i * width, width);
          i++;
        }
        reqs.computeIfAbsent(e.getKey(), k -> newPush(step))
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName(def.name())
                    .addAllRowIds(e.getValue())
                    .setDtype(gradientType)
                    .setData(TensorCodec.encode(data, 0, data.length, gradientType)));
      }
    }
    return reqs;
  }

  /** Row ids by the pserver that owns them, each pserver's ids in ascending order. */
  private Map<Integer, Set<Long>> byOwner(ParameterDef table, Iterable<Long> ids) {
    Map<Integer, Set<Long>> out = new TreeMap<>();
    for (long id : ids) {
      out.computeIfAbsent(layout.ownerOfRow(table.name(), id), k -> new TreeSet<>()).add(id);
    }
    return out;
  }

  /** The pulls of every dense block, in request-sized groups. */
  public List<Planned<PullParametersRequest>> pulls() {
    List<Planned<PullParametersRequest>> out = new ArrayList<>();
    for (int ps = 0; ps < layout.pservers(); ps++) {
      for (List<BlockSpec> group : groups(layout.blocksOf(ps))) {
        PullParametersRequest.Builder req = PullParametersRequest.newBuilder();
        req.setTrainerId(trainerId);
        for (BlockSpec b : group) {
          req.addBlocks(BlockRef.newBuilder().setName(b.name()).setBlock(b.block()));
        }
        out.add(new Planned<>(ps, req.build()));
      }
    }
    return out;
  }

  /** The pulls of the rows {@code ids} of every sparse table, one per owning pserver. */
  public List<Planned<PullParametersRequest>> rowPulls(long[] ids) {
    Map<Integer, PullParametersRequest.Builder> reqs = new TreeMap<>();
    List<Long> all = new ArrayList<>(ids.length);
    for (long id : ids) {
      all.add(id);
    }
    for (ParameterDef def : layout.sparseTables()) {
      for (Map.Entry<Integer, Set<Long>> e : byOwner(def, all).entrySet()) {
        reqs.computeIfAbsent(
                e.getKey(), k -> PullParametersRequest.newBuilder().setTrainerId(trainerId))
            .addSparseRows(
                SparseRowsRef.newBuilder().setName(def.name()).addAllRowIds(e.getValue()));
      }
    }
    List<Planned<PullParametersRequest>> out = new ArrayList<>();
    reqs.forEach((ps, req) -> out.add(new Planned<>(ps, req.build())));
    return out;
  }

  /**
   * The initialisation of pserver {@code ps} with {@code values} (float32, request-sized): its
   * dense blocks, then the rows of the sparse tables of {@code values} that it owns (a warm start;
   * a table without rows sends none), cut into requests of at most {@link #MAX_REQUEST_BYTES}.
   */
  public List<InitParametersRequest> inits(int ps, Parameters values, String initId) {
    List<InitParametersRequest> out = new ArrayList<>();
    for (List<BlockSpec> group : groups(layout.blocksOf(ps))) {
      InitParametersRequest.Builder req = newInit(initId);
      group.forEach(b -> req.addBlocks(block(b, values, DataType.FLOAT32)));
      out.add(req.build());
    }
    for (ParameterDef def : layout.sparseTables()) {
      Parameters.SparseTable table = values.sparse(def.name());
      Set<Long> owned = byOwner(def, table.rows().keySet()).get(ps);
      if (owned != null) {
        initRows(def.name(), table, owned, initId, out);
      }
    }
    if (out.isEmpty()) {
      out.add(newInit(initId).build());
    }
    return out;
  }

  /** Adds the rows {@code ids} of {@code table}, as few requests as the size limit allows. */
  private void initRows(
      String name,
      Parameters.SparseTable table,
      Set<Long> ids,
      String initId,
      List<InitParametersRequest> out) {
    int width = table.width();
    // Each row costs its floats and at most 10 bytes of varint id.
    int perRequest = Math.max(1, MAX_REQUEST_BYTES / (4 * width + 10));
    List<Long> all = new ArrayList<>(ids);
    for (int from = 0; from < all.size(); from += perRequest) {
      List<Long> chunk = all.subList(from, Math.min(all.size(), from + perRequest));
      float[] data = new float[chunk.size() * width];
      for (int i = 0; i < chunk.size(); i++) {
        System.arraycopy(table.rows().get(chunk.get(i)), 0, data, i * width, width);
      }
      out.add(
          newInit(initId)
              .addSparseRows(
                  SparseRows.newBuilder()
                      .setName(name)
                      .addAllRowIds(chunk)
                      .setDtype(DataType.FLOAT32)
                      .setData(TensorCodec.encode(data)))
              .build());
    }
  }

  private InitParametersRequest.Builder newInit(String initId) {
    return InitParametersRequest.newBuilder()
        .setTrainerId(trainerId)
        .addAllParameters(layout.specs())
        .setInitId(initId)
        .setMode(mode)
        .setStaleness(staleness);
  }
}
