package dev.paramserver.pserver.shard;

import com.google.protobuf.TextFormat;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** InitParameters and FinishInit on a shard; the caller holds the shard's write lock. */
final class ShardInit {
  private static final Logger log = LoggerFactory.getLogger(ShardInit.class);

  private ShardInit() {}

  /** {@link #apply} under the shard's write lock; returns the number of blocks. */
  static int applyLocked(ParameterShard shard, InitParametersRequest request) {
    shard.structure().writeLock().lock();
    try {
      apply(shard, request);
      return shard.blocks().size();
    } finally {
      shard.structure().writeLock().unlock();
    }
  }

  /** {@link #finish} under the write lock; true when it made the shard initialised. */
  static boolean finishLocked(ParameterShard shard, FinishInitRequest request) {
    boolean fresh;
    shard.structure().writeLock().lock();
    try {
      fresh = !shard.initialised();
      finish(shard, request);
    } finally {
      shard.structure().writeLock().unlock();
    }
    return fresh && shard.initialised();
  }

  static void apply(ParameterShard shard, InitParametersRequest request) {
    String id = request.getInitId();
    if (id.isEmpty()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT, "InitParameters has an empty init_id: give every init an id");
    }
    if (request.getMode() == TrainingMode.UNRECOGNIZED) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "InitParameters has mode number "
              + request.getModeValue()
              + ", which this pserver does not know: send ASYNC, SYNC or BOUNDED_STALENESS");
    }
    String current = shard.pendingInitId();
    if (shard.initialised() && !id.equals(current)) {
      throw new ServiceException(
          ErrorReason.INIT_CONFLICT,
          "pserver is already initialised with init '"
              + current
              + "' (step "
              + shard.step()
              + "); InitParameters sent init '"
              + id
              + "': keep the parameters in place");
    }
    // A new initialiser took over from one that did not finish: start over, once this request is
    // known to be valid (a refused request leaves the unfinished init in place). Until then it is
    // checked against an empty shard.
    String replaced = null;
    if (!shard.initialised() && current != null && !id.equals(current)) {
      replaced = current;
      current = null;
    }
    Map<String, Parameter> heldParameters = replaced == null ? shard.parameters() : Map.of();
    Map<String, DenseBlock> heldBlocks = replaced == null ? shard.blocks() : Map.of();
    if (current != null
        && (shard.mode() != request.getMode() || shard.staleness() != request.getStaleness())) {
      throw new ServiceException(
          ErrorReason.INIT_CONFLICT,
          "init '"
              + id
              + "' was started in mode "
              + shard.mode()
              + " (staleness "
              + shard.staleness()
              + "); this call asks for "
              + request.getMode()
              + " (staleness "
              + request.getStaleness()
              + "): use one mode for the whole init");
    }

    // Validate everything before changing anything.
    Map<String, Parameter> defined = new LinkedHashMap<>();
    for (ParameterSpec spec : request.getParametersList()) {
      Parameter existing = heldParameters.get(spec.getName());
      Parameter earlier = defined.get(spec.getName());
      Parameter other = existing != null ? existing : earlier;
      if (other != null) {
        if (!other.spec.equals(spec)) {
          throw new ServiceException(
              ErrorReason.INIT_CONFLICT,
              "parameter '"
                  + spec.getName()
                  + "' is already defined as "
                  + describe(other.spec)
                  + "; InitParameters defines it as "
                  + describe(spec)
                  + ": use one definition per parameter");
        }
        if (existing != null) {
          continue;
        }
      }
      defined.put(spec.getName(), Parameter.of(spec));
    }
    Map<String, float[]> newBlocks = new HashMap<>();
    List<TensorBlock> ordered = new ArrayList<>();
    for (TensorBlock b : request.getBlocksList()) {
      Parameter p = defined.getOrDefault(b.getName(), heldParameters.get(b.getName()));
      String what = "initial value of parameter '" + b.getName() + "' block " + b.getBlock();
      if (p == null) {
        throw new ServiceException(
            ErrorReason.UNKNOWN_PARAMETER,
            what
                + " names an undefined parameter: send its ParameterSpec in the same or an"
                + " earlier InitParameters");
      }
      if (p.sparse()) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            what
                + ": '"
                + b.getName()
                + "' is a sparse table, whose rows are created on first use");
      }
      if (b.getBlock() >= p.blockCount) {
        throw new ServiceException(
            ErrorReason.UNKNOWN_PARAMETER,
            what + ": parameter '" + b.getName() + "' has " + p.blockCount + " blocks");
      }
      long offset = (long) b.getBlock() * p.blockSize;
      if (b.getOffset() != offset) {
        throw new ServiceException(
            ErrorReason.SHAPE_MISMATCH,
            what
                + " has offset "
                + b.getOffset()
                + ", expected "
                + offset
                + " (block size "
                + p.blockSize
                + ")");
      }
      if (b.getDtype() != DataType.FLOAT32) {
        throw new ServiceException(
            ErrorReason.UNSUPPORTED_DTYPE,
            what + " has dtype " + b.getDtype() + ": initial values must be FLOAT32");
      }
      int expected = p.blockLength(b.getBlock());
      if (b.getData().size() != 4L * expected) {
        throw new ServiceException(
            ErrorReason.SHAPE_MISMATCH,
            "parameter '"
                + b.getName()
                + "' block "
                + b.getBlock()
                + " expects "
                + expected
                + " float32 values, got "
                + (b.getData().size() / 4)
                + (b.getData().size() % 4 == 0 ? "" : " and " + b.getData().size() % 4 + " bytes"));
      }
      String key = DenseBlock.key(b.getName(), b.getBlock());
      float[] values = TensorCodec.decode(b.getData());
      DenseBlock existing = heldBlocks.get(key);
      if (existing != null) {
        if (!shard.initialised() && !Arrays.equals(existing.copyValues(), values)) {
          throw new ServiceException(
              ErrorReason.INIT_CONFLICT,
              what
                  + " differs from the value already stored for init '"
                  + id
                  + "': send each block once per init");
        }
        continue;
      }
      float[] earlier = newBlocks.put(key, values);
      if (earlier != null && !Arrays.equals(earlier, values)) {
        throw new ServiceException(
            ErrorReason.INIT_CONFLICT, what + " appears twice with different values");
      }
      if (earlier == null) {
        ordered.add(b);
      }
    }

    List<float[]> rowValues = rows(heldParameters, defined, request);

    // Apply.
    if (replaced != null) {
      log.warn(
          "init '{}' replaces unfinished init '{}' ({} blocks dropped)",
          id,
          replaced,
          shard.blocks().size());
      shard.clear();
    }
    if (current == null) {
      shard.setDefinition(id, request.getMode(), request.getStaleness());
    }
    for (Parameter p : defined.values()) {
      shard.parameters().put(p.name(), p);
      if (p.sparse()) {
        shard.defineTable(p);
      }
    }
    for (TensorBlock b : ordered) {
      Parameter p = shard.parameters().get(b.getName());
      String key = DenseBlock.key(b.getName(), b.getBlock());
      shard.blocks().put(key, new DenseBlock(p, b.getBlock(), newBlocks.get(key)));
    }
    // A shard that is initialised keeps its rows, as it keeps its blocks.
    if (!shard.initialised()) {
      for (int i = 0; i < request.getSparseRowsCount(); i++) {
        install(
            shard.tables().get(request.getSparseRows(i).getName()),
            request.getSparseRows(i),
            rowValues.get(i));
      }
    }
  }

  /** Checks the initial sparse rows of {@code request}; their values, one array per entry. */
  private static List<float[]> rows(
      Map<String, Parameter> held, Map<String, Parameter> defined, InitParametersRequest request) {
    List<float[]> out = new ArrayList<>();
    for (SparseRows r : request.getSparseRowsList()) {
      Parameter p = defined.getOrDefault(r.getName(), held.get(r.getName()));
      String what = "initial rows of sparse table '" + r.getName() + "'";
      if (p == null) {
        throw new ServiceException(
            ErrorReason.UNKNOWN_PARAMETER,
            what
                + " name an undefined parameter: send its ParameterSpec in the same or an"
                + " earlier InitParameters");
      }
      if (!p.sparse()) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            what + ": '" + r.getName() + "' is a dense parameter: send its values as blocks");
      }
      if (r.getDtype() != DataType.FLOAT32) {
        throw new ServiceException(
            ErrorReason.UNSUPPORTED_DTYPE,
            what + " have dtype " + r.getDtype() + ": initial values must be FLOAT32");
      }
      for (long id : r.getRowIdsList()) {
        if (id < 0 || (p.rows > 0 && id >= p.rows)) {
          throw new ServiceException(
              ErrorReason.BAD_ARGUMENT,
              what
                  + ": row id "
                  + id
                  + " is out of range [0, "
                  + (p.rows > 0 ? p.rows : "2^63")
                  + ")");
        }
      }
      long expected = (long) r.getRowIdsCount() * p.width;
      if (r.getData().size() != 4L * expected) {
        throw new ServiceException(
            ErrorReason.SHAPE_MISMATCH,
            what
                + ": "
                + r.getRowIdsCount()
                + " rows of width "
                + p.width
                + " expect "
                + expected
                + " float32 values, got "
                + r.getData().size() / 4
                + (r.getData().size() % 4 == 0 ? "" : " and " + r.getData().size() % 4 + " bytes"));
      }
      out.add(TensorCodec.decode(r.getData()));
    }
    return out;
  }

  private static void install(SparseTable table, SparseRows rows, float[] values) {
    int width = table.width();
    float[] row = new float[width];
    for (int i = 0; i < rows.getRowIdsCount(); i++) {
      System.arraycopy(values, i * width, row, 0, width);
      table.install(rows.getRowIds(i), row);
    }
  }

  static void finish(ParameterShard shard, FinishInitRequest request) {
    String id = request.getInitId();
    if (id.isEmpty()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT, "FinishInit has an empty init_id: pass the InitParameters' id");
    }
    String current = shard.pendingInitId();
    if (shard.initialised()) {
      if (id.equals(current)) {
        return;
      }
      throw new ServiceException(
          ErrorReason.INIT_CONFLICT,
          "pserver is already initialised with init '"
              + current
              + "'; FinishInit sent init '"
              + id
              + "'");
    }
    if (current != null && !id.equals(current)) {
      throw new ServiceException(
          ErrorReason.INIT_CONFLICT,
          "FinishInit for init '"
              + id
              + "' but the parameters in place belong to init '"
              + current
              + "': send InitParameters for init '"
              + id
              + "' first");
    }
    int held = shard.blocks().size();
    if (held != request.getExpectedBlocks()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "FinishInit expects "
              + request.getExpectedBlocks()
              + " dense blocks but this pserver"
              + " holds "
              + held
              + " of init '"
              + id
              + "': send the missing blocks with InitParameters, then FinishInit again");
    }
    if (current == null) {
      shard.setDefinition(id, shard.mode(), shard.staleness());
    }
    shard.setInitialised(true);
    log.info(
        "initialised by trainer '{}': init '{}', {} parameters, {} blocks, mode {}",
        request.getTrainerId(),
        id,
        shard.parameters().size(),
        held,
        shard.mode());
  }

  private static String describe(ParameterSpec s) {
    return "{" + TextFormat.printer().emittingSingleLine(true).printToString(s) + "}";
  }

  /**
   * Drops every parameter of {@code shard} under its write lock (see {@link ParameterShard#reset}).
   */
  static void reset(ParameterShard shard) {
    shard.structure().writeLock().lock();
    try {
      shard.clear();
      shard.recordCheckpoint(0);
    } finally {
      shard.structure().writeLock().unlock();
    }
    SyncAggregator sync = shard.pushes.sync();
    if (sync != null) {
      sync.reset();
    }
  }
}
