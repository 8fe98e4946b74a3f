package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.tensor.ReceiveBuffers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;

/** The pull path of {@link ParameterShard}: reads blocks and sparse rows under the read lock. */
final class ShardReads {
  private final ParameterShard shard;

  ShardReads(ParameterShard shard) {
    this.shard = shard;
  }

  PullParametersResponse pull(PullParametersRequest request) {
    return pull(request, null);
  }

  /**
   * {@link #pull}; with {@code lent} not null, each dense block of at least {@link
   * ReceiveBuffers#MIN_BYTES} is encoded into an array of the shard's answer pool, added to {@code
   * lent}: the answer is a view of them until they are given back ({@link AnswerArrays}).
   */
  PullParametersResponse pull(PullParametersRequest request, List<byte[]> lent) {
    if (shard.mode() != TrainingMode.ASYNC
        && shard.initialised()
        && request.getMinStep() > shard.step()) {
      shard.pushes.requireSync().awaitStep(request.getMinStep());
    }
    shard.structure().readLock().lock();
    try {
      shard.checkServing();
      PullParametersResponse.Builder out = PullParametersResponse.newBuilder();
      long at = shard.step();
      List<DenseBlock> wanted = new ArrayList<>();
      RowOwnership owned = shard.gate().rowOwnership();
      if (request.getBlocksCount() == 0 && request.getSparseRowsCount() == 0) {
        for (DenseBlock b : shard.blocks().values()) {
          if (owned.serves(b.name(), b.block)) {
            wanted.add(b);
          }
        }
        wanted.sort(ParameterShard.BLOCK_ORDER);
      } else {
        for (BlockRef ref : request.getBlocksList()) {
          owned.checkBlock(ref.getName(), ref.getBlock());
          DenseBlock b = shard.blocks().get(DenseBlock.key(ref.getName(), ref.getBlock()));
          if (b == null) {
            throw ValidatedPush.unknownBlock(ref.getName(), ref.getBlock(), shard.parameters());
          }
          wanted.add(b);
        }
      }
      List<SparseTable> sparseTables = new ArrayList<>();
      List<SparseRowsRef> sparseRefs = new ArrayList<>();
      List<long[]> sparseIds = new ArrayList<>();
      for (SparseRowsRef ref : request.getSparseRowsList()) {
        SparseTable table = shard.tables().get(ref.getName());
        if (table == null) {
          throw ValidatedPush.unknownTable(ref.getName(), shard.parameters());
        }
        sparseTables.add(table);
        sparseRefs.add(ref);
        sparseIds.add(ValidatedPush.checkRowIds(table, ValidatedPush.rowIds(ref), owned));
      }
      for (DenseBlock b : wanted) {
        out.addBlocks(
            TensorBlock.newBuilder()
                .setName(b.name())
                .setBlock(b.block)
                .setOffset(b.offset)
                .setDtype(DataType.FLOAT32)
                .setData(encode(b, lent)));
      }
      // a writer's held rows it changed last are left out (asynchronous mode only: a synchronous
      // step applies every trainer's gradients at once)
      int writer = shard.mode() == TrainingMode.ASYNC ? request.getWriterTag() : 0;
      for (int t = 0; t < sparseTables.size(); t++) {
        SparseRowsRef ref = sparseRefs.get(t);
        int held = writer == 0 ? 0 : checkHeld(ref);
        out.addSparseRows(
            held == 0
                ? readRows(sparseTables.get(t), sparseIds.get(t), ref.getRowIdsList())
                : readChanged(sparseTables.get(t), sparseIds.get(t), ref, writer));
      }
      return out.setStep(at).setRowsChangedOnly(writer != 0).build();
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  private ByteString encode(DenseBlock b, List<byte[]> lent) {
    int bytes = b.values.length * Float.BYTES;
    if (lent == null || bytes < ReceiveBuffers.MIN_BYTES) {
      return b.encode();
    }
    byte[] into = shard.pushes.answerArrays.take(bytes);
    lent.add(into);
    return b.encodeInto(into);
  }

  PullParametersResponse valuesAfter(PushGradientsRequest push, long step) {
    return valuesAfter(push, step, true, null);
  }

  /**
   * {@link #valuesAfter}; without {@code rows}, the dense blocks only; {@code lent} as in {@link
   * #pull(PullParametersRequest, List)}.
   */
  PullParametersResponse valuesAfter(
      PushGradientsRequest push, long step, boolean rows, List<byte[]> lent) {
    PullParametersRequest.Builder pull =
        PullParametersRequest.newBuilder().setTrainerId(push.getTrainerId());
    if (shard.mode() != TrainingMode.ASYNC) {
      pull.setMinStep(step);
    }
    if (push.getReturnValues()) {
      for (TensorBlock g : push.getGradientsList()) {
        pull.addBlocks(BlockRef.newBuilder().setName(g.getName()).setBlock(g.getBlock()));
      }
    }
    if (rows && push.getReturnRows()) {
      for (SparseRows g : push.getSparseGradientsList()) {
        pull.addSparseRows(
            SparseRowsRef.newBuilder().setName(g.getName()).addAllRowIds(g.getRowIdsList()));
      }
    }
    if (pull.getBlocksCount() == 0 && pull.getSparseRowsCount() == 0) {
      return PullParametersResponse.getDefaultInstance();
    }
    return pull(pull.build(), lent);
  }

  private static int checkHeld(SparseRowsRef ref) {
    if (Integer.toUnsignedLong(ref.getHeld()) > ref.getRowIdsCount()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "sparse table '"
              + ref.getName()
              + "': held "
              + Integer.toUnsignedLong(ref.getHeld())
              + " is more than the "
              + ref.getRowIdsCount()
              + " row ids asked for");
    }
    return ref.getHeld();
  }

  /**
   * The rows {@code ids} in the request's order, except those among the first {@code ref.held}
   * whose last update carried the tag {@code writer}; every row when {@code ids} repeats an id (a
   * repeated id is answered at each position, as {@link #readRows} does).
   */
  private static SparseRows readChanged(
      SparseTable table, long[] ids, SparseRowsRef ref, int writer) {
    int[] first = FirstOccurrences.of(ids);
    for (int i = 0; i < ids.length; i++) {
      if (first[i] != i) {
        return readRows(table, ids, ref.getRowIdsList());
      }
    }
    int held = ref.getHeld();
    int width = table.width();
    float[] row = new float[width];
    byte[] bytes = new byte[ids.length * width * Float.BYTES];
    FloatBuffer out = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    SparseRows.Builder rows = SparseRows.newBuilder().setName(table.name());
    int n = 0;
    for (int i = 0; i < ids.length; i++) {
      if (i < held) {
        if (!table.readUnlessWriter(ids[i], row, 0, writer)) {
          continue;
        }
      } else {
        table.read(ids[i], row, 0);
      }
      out.put(n * width, row, 0, width);
      rows.addRowIds(ids[i]);
      n++;
    }
    return rows.setDtype(DataType.FLOAT32)
        .setData(UnsafeByteOperations.unsafeWrap(bytes, 0, n * width * Float.BYTES))
        .build();
  }

  /**
   * The rows {@code ids} (as {@code idList}, the request's list) in the request's order: each
   * distinct id is read once, straight into the answer's little-endian bytes, and a repeated id's
   * bytes are copied from its first occurrence; the ids are the request's list, copied whole.
   */
  private static SparseRows readRows(SparseTable table, long[] ids, List<Long> idList) {
    int width = table.width();
    int rowBytes = width * Float.BYTES;
    byte[] bytes = new byte[ids.length * rowBytes];
    FloatBuffer out = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    float[] row = new float[width];
    int[] first = FirstOccurrences.of(ids);
    for (int i = 0; i < ids.length; i++) {
      int f = first[i];
      if (f < i) {
        System.arraycopy(bytes, f * rowBytes, bytes, i * rowBytes, rowBytes);
      } else {
        table.read(ids[i], row, 0);
        out.put(i * width, row, 0, width);
      }
    }
    return SparseRows.newBuilder()
        .setName(table.name())
        .setDtype(DataType.FLOAT32)
        .addAllRowIds(idList)
        .setData(UnsafeByteOperations.unsafeWrap(bytes))
        .build();
  }
}
