package dev.paramserver.trainer.pserver;

import com.google.protobuf.UnsafeByteOperations;
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
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
    return pushes(grads, step, returnValues, false);
  }

  /**
   * As {@link #pushes(Parameters, long, boolean)}; with {@code returnRows} (asynchronous mode only)
   * each sparse part asks for its rows' values after the push in its answer (a trainer that caches
   * rows takes them in).
   */
  public List<Planned<PushGradientsRequest>> pushes(
      Parameters grads, long step, boolean returnValues, boolean returnRows) {
    return pushes(grads, null, step, returnValues, returnRows);
  }

  /**
   * As {@link #pushes(Parameters, long, boolean, boolean)}, the sparse-row gradients taken from
   * {@code sparseRows} by table name (null: from {@code grads}' sparse tables) instead.
   */
  public List<Planned<PushGradientsRequest>> pushes(
      Parameters grads,
      Map<String, FlatRows> sparseRows,
      long step,
      boolean returnValues,
      boolean returnRows) {
    return pushes(grads, sparseRows, step, returnValues, returnRows, 0);
  }

  /**
   * As {@link #pushes(Parameters, Map, long, boolean, boolean)}; with {@code returnRows} and a
   * {@code writerTag} (not 0) each sparse part carries the tag, so that its answer may leave out
   * the rows only this writer changed since its previous push of them ({@code writer_tag}). Not
   * with gradients sent in a type other than float32: the pservers then apply gradients other than
   * those the trainer applied locally.
   */
  public List<Planned<PushGradientsRequest>> pushes(
      Parameters grads,
      Map<String, FlatRows> sparseRows,
      long step,
      boolean returnValues,
      boolean returnRows,
      int writerTag) {
    Routing routing = layout.routing();
    Map<Integer, PushGradientsRequest.Builder> sparse =
        sparsePushes(routing, sparseRows != null ? sparseRows : flat(grads), step, returnRows);
    if (returnRows && writerTag != 0 && gradientType == DataType.FLOAT32) {
      sparse.values().forEach(b -> b.setWriterTag(writerTag));
    }
    List<Planned<PushGradientsRequest>> out = new ArrayList<>();
    for (int ps = 0; ps < routing.pservers(); ps++) {
      if (sync && !routing.ownsAnything(ps)) {
        continue;
      }
      List<List<BlockSpec>> groups = groups(routing.blocksOf(ps));
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
    Routing routing = layout.routing();
    List<Planned<PushGradientsRequest>> out = new ArrayList<>();
    for (int ps = 0; ps < routing.pservers(); ps++) {
      if (routing.ownsAnything(ps)) {
        out.add(new Planned<>(ps, newPush(step).build()));
      }
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

  /** The rows of {@code grads}' sparse tables in flat arrays, in slot order (no lookup by id). */
  private Map<String, FlatRows> flat(Parameters grads) {
    Map<String, FlatRows> out = new HashMap<>();
    for (ParameterDef def : layout.sparseTables()) {
      Parameters.SparseTable table = grads.sparse(def.name());
      int size = table.size();
      int width = table.width();
      long[] ids = new long[size];
      float[] values = new float[size * width];
      int[] at = {0};
      table.forEach(
          (id, row) -> {
            ids[at[0]] = id;
            System.arraycopy(row, 0, values, at[0]++ * width, width);
          });
      out.put(def.name(), new FlatRows(ids, size, values));
    }
    return out;
  }

  /**
   * The sparse-row gradients of {@code rows}, one request per owning pserver; with {@code
   * returnRows} each asks for its rows' values after the push in its answer.
   */
  private Map<Integer, PushGradientsRequest.Builder> sparsePushes(
      Routing routing, Map<String, FlatRows> rows, long step, boolean returnRows) {
    Map<Integer, PushGradientsRequest.Builder> reqs = new TreeMap<>();
    for (ParameterDef def : layout.sparseTables()) {
      FlatRows table = rows.get(def.name());
      if (table == null || table.count() == 0) {
        continue;
      }
      int size = table.count();
      int[] owners = new int[size];
      int[] per = routing.owners(def.name(), table.ids(), size, owners);
      for (int ps = 0; ps < per.length; ps++) {
        if (per[ps] > 0) {
          reqs.computeIfAbsent(ps, k -> newPush(step).setReturnRows(returnRows))
              .addSparseGradients(
                  rows(def.name(), def.width(), table, owners, ps, per[ps], gradientType));
        }
      }
    }
    return reqs;
  }

  /** The rows of {@code table} that pserver {@code ps} owns, as one message. */
  private static SparseRows rows(
      String name, int width, FlatRows table, int[] owners, int ps, int count, DataType type) {
    SparseRows.Builder out = SparseRows.newBuilder().setName(name).setDtype(type);
    long[] ids = table.ids();
    float[] values = table.values();
    if (type == DataType.FLOAT32) {
      // straight into the little-endian bytes the request carries: no float array between
      byte[] bytes = new byte[count * width * 4];
      FloatBuffer data = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
      for (int i = 0; i < table.count(); i++) {
        if (owners[i] == ps) {
          data.put(values, i * width, width);
          out.addRowIds(ids[i]);
        }
      }
      return out.setData(UnsafeByteOperations.unsafeWrap(bytes)).build();
    }
    float[] data = new float[count * width];
    int k = 0;
    for (int i = 0; i < table.count(); i++) {
      if (owners[i] == ps) {
        System.arraycopy(values, i * width, data, k * width, width);
        out.addRowIds(ids[i]);
        k++;
      }
    }
    return out.setData(TensorCodec.encode(data, 0, data.length, type)).build();
  }

  /** Rows {@code ids} of {@code table} (each present) as one message of {@code type}. */
  static SparseRows rows(String name, Parameters.SparseTable table, long[] ids, DataType type) {
    int width = table.width();
    float[] data = new float[ids.length * width];
    SparseRows.Builder out = SparseRows.newBuilder().setName(name).setDtype(type);
    for (int i = 0; i < ids.length; i++) {
      System.arraycopy(table.rowOrNull(ids[i]), 0, data, i * width, width);
      out.addRowIds(ids[i]);
    }
    return out.setData(TensorCodec.encode(data, 0, data.length, type)).build();
  }

  /** The pulls of every dense block, in request-sized groups. */
  public List<Planned<PullParametersRequest>> pulls() {
    Routing routing = layout.routing();
    List<Planned<PullParametersRequest>> out = new ArrayList<>();
    for (int ps = 0; ps < routing.pservers(); ps++) {
      for (List<BlockSpec> group : groups(routing.blocksOf(ps))) {
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

  /**
   * The pulls of the rows {@code ids} of every sparse table, one per owning pserver (each id once,
   * ascending).
   */
  public List<Planned<PullParametersRequest>> rowPulls(long[] ids) {
    Routing routing = layout.routing();
    Map<Integer, PullParametersRequest.Builder> reqs = new TreeMap<>();
    for (ParameterDef def : layout.sparseTables()) {
      long[][] owned = routing.byOwner(def.name(), ids);
      for (int ps = 0; ps < owned.length; ps++) {
        if (owned[ps].length > 0) {
          reqs.computeIfAbsent(ps, k -> PullParametersRequest.newBuilder().setTrainerId(trainerId))
              .addSparseRows(rowsRef(def.name(), owned[ps]));
        }
      }
    }
    List<Planned<PullParametersRequest>> out = new ArrayList<>();
    reqs.forEach((ps, req) -> out.add(new Planned<>(ps, req.build())));
    return out;
  }

  /**
   * The pulls of rows by table, one per owning pserver: {@code ids.get(t)} are the rows wanted of
   * table {@code t}, distinct, asked for in the order given (no sort).
   */
  public List<Planned<PullParametersRequest>> rowPulls(Map<String, long[]> ids) {
    return rowPulls(RowWants.of(ids));
  }

  /**
   * {@link #rowPulls(Map)} of {@code wants}: each pserver's part of a table keeps the held rows
   * first, counted in {@code held}, and with a writer tag every request carries it ({@code
   * writer_tag}: the pserver may leave out the held rows only this writer changed).
   */
  public List<Planned<PullParametersRequest>> rowPulls(RowWants wants) {
    Routing routing = layout.routing();
    Map<Integer, PullParametersRequest.Builder> reqs = new TreeMap<>();
    wants
        .ids()
        .forEach(
            (table, wanted) -> {
              int[] held = new int[routing.pservers()];
              long[][] owned = routing.partition(table, wanted, wants.held(table), held);
              for (int ps = 0; ps < owned.length; ps++) {
                if (owned[ps].length > 0) {
                  reqs.computeIfAbsent(
                          ps,
                          k ->
                              PullParametersRequest.newBuilder()
                                  .setTrainerId(trainerId)
                                  .setWriterTag(wants.writerTag()))
                      .addSparseRows(rowsRef(table, owned[ps], held[ps]));
                }
              }
            });
    List<Planned<PullParametersRequest>> out = new ArrayList<>();
    reqs.forEach((ps, req) -> out.add(new Planned<>(ps, req.build())));
    return out;
  }

  private static SparseRowsRef rowsRef(String table, long[] ids) {
    return rowsRef(table, ids, 0);
  }

  private static SparseRowsRef rowsRef(String table, long[] ids, int held) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(table).setHeld(held);
    for (long id : ids) {
      ref.addRowIds(id);
    }
    return ref.build();
  }

  /**
   * The initialisation of pserver {@code ps} with {@code values} (float32, request-sized): its
   * dense blocks, then the rows of the sparse tables of {@code values} that it owns (a warm start;
   * a table without rows sends none), cut into requests of at most {@link #MAX_REQUEST_BYTES}.
   */
  public List<InitParametersRequest> inits(int ps, Parameters values, String initId) {
    return inits(layout.routing(), ps, values, initId);
  }

  /** As {@link #inits(int, Parameters, String)}, by {@code routing}. */
  public List<InitParametersRequest> inits(
      Routing routing, int ps, Parameters values, String initId) {
    List<InitParametersRequest> out = new ArrayList<>();
    for (List<BlockSpec> group : groups(routing.blocksOf(ps))) {
      InitParametersRequest.Builder req = newInit(initId);
      group.forEach(b -> req.addBlocks(block(b, values, DataType.FLOAT32)));
      out.add(req.build());
    }
    for (ParameterDef def : layout.sparseTables()) {
      Parameters.SparseTable table = values.sparse(def.name());
      long[][] byOwner = routing.byOwner(def.name(), table.ids());
      long[] owned = ps < byOwner.length ? byOwner[ps] : new long[0];
      if (owned.length > 0) {
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
      long[] ids,
      String initId,
      List<InitParametersRequest> out) {
    // Each row costs its floats and at most 10 bytes of varint id.
    int perRequest = Math.max(1, MAX_REQUEST_BYTES / (4 * table.width() + 10));
    for (int from = 0; from < ids.length; from += perRequest) {
      long[] chunk = Arrays.copyOfRange(ids, from, Math.min(ids.length, from + perRequest));
      out.add(newInit(initId).addSparseRows(rows(name, table, chunk, DataType.FLOAT32)).build());
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
