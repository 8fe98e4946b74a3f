package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.pserver.sparse.SparseRowStore;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A checkpoint being restored into a shard as it is read: the rows of each sparse-table entry go
 * into fresh row stores straight away (memory holds the tables being built plus one entry, never
 * the whole parsed checkpoint), and nothing reaches the shard until {@link #install} — which the
 * reader calls only once the file's CRC proved it whole. {@link #discard} drops what was staged
 * (the file proved unreadable) and gives the rows' bytes back to the sparse budget.
 *
 * <p>Not thread-safe: one reader feeds it.
 */
public final class ShardRestore {
  private final ParameterShard shard;
  private final Map<String, SparseTable> staged = new HashMap<>();
  private boolean done;

  ShardRestore(ParameterShard shard) {
    this.shard = shard;
  }

  /**
   * Replaces the shard's content with a parsed checkpoint's (see {@link ParameterShard#restore}).
   */
  static void restore(ParameterShard shard, ShardCheckpoint checkpoint) {
    ShardRestore restore = new ShardRestore(shard);
    try {
      for (SparseTableCheckpoint tc : checkpoint.getSparseTablesList()) {
        restore.table(checkpoint, tc);
      }
    } catch (RuntimeException e) {
      restore.discard();
      throw e;
    }
    restore.install(checkpoint.toBuilder().clearSparseTables().build());
  }

  /**
   * Adds the rows of one sparse-table entry.
   *
   * @param header the checkpoint's fields read so far: it holds the parameter definitions, which
   *     come before the tables in every checkpoint file
   */
  public void table(ShardCheckpoint header, SparseTableCheckpoint tc) {
    if (done) {
      throw new IllegalStateException("restore already installed or discarded");
    }
    checkVersion(header);
    SparseTable t = staged.get(tc.getName());
    if (t == null) {
      ParameterSpec spec =
          header.getParametersList().stream()
              .filter(p -> p.getName().equals(tc.getName()) && p.getSparse())
              .findFirst()
              .orElseThrow(() -> corrupt("sparse table " + tc.getName() + " has no definition"));
      t = shard.newTable(Parameter.of(spec));
      staged.put(tc.getName(), t);
    }
    addRows(t, tc);
    if (tc.getAdmissionSketchCount() > 0) {
      List<byte[]> counters = new ArrayList<>();
      for (ByteString c : tc.getAdmissionSketchList()) {
        counters.add(c.toByteArray());
      }
      // another shape (settings changed since): the table starts with an empty sketch
      t.store.restoreSketch(counters, tc.getAdmissionIncrementsList());
    }
  }

  static void addRows(SparseTable t, SparseTableCheckpoint tc) {
    if (tc.getWidth() != t.width()) {
      throw corrupt(
          "sparse table " + tc.getName() + " has width " + tc.getWidth() + ", not " + t.width());
    }
    int width = t.width();
    int n = tc.getRowIdsCount();
    float[] values = floats(tc.getValues(), n * width, tc.getName());
    int slots = t.parameter.optimizer.slots();
    if (tc.getSlotsCount() != slots || tc.getRowUpdatesCount() != n) {
      throw corrupt("sparse table " + tc.getName() + " has wrong slot or update counts");
    }
    boolean scored =
        tc.getRowEvictionScoresCount() == n
            && n > 0
            && tc.getEvictionPolicy().equals(t.store.settings().policy().name());
    float[][] slotData = new float[slots][];
    for (int s = 0; s < slots; s++) {
      slotData[s] = floats(tc.getSlots(s), n * width, tc.getName());
    }
    float[] rv = new float[width];
    float[][] rs = new float[slots][width];
    for (int i = 0; i < n; i++) {
      System.arraycopy(values, i * width, rv, 0, width);
      for (int s = 0; s < slots; s++) {
        System.arraycopy(slotData[s], i * width, rs[s], 0, width);
      }
      t.store.put(
          tc.getRowIds(i),
          rv,
          rs,
          tc.getRowUpdates(i),
          scored ? tc.getRowEvictionScores(i) : SparseRowStore.NO_SCORE);
    }
  }

  /**
   * Replaces the shard's content with the checkpoint's: {@code header} (every field but the table
   * rows) and the staged tables.
   */
  public void install(ShardCheckpoint header) {
    if (done) {
      throw new IllegalStateException("restore already installed or discarded");
    }
    done = true;
    try {
      checkVersion(header);
      ShardSnapshots.installLocked(shard, header, staged);
    } catch (RuntimeException e) {
      staged.values().forEach(t -> t.store.clear());
      throw e;
    }
  }

  /** Drops what was staged. */
  public void discard() {
    done = true;
    staged.values().forEach(t -> t.store.clear());
    staged.clear();
  }

  private static void checkVersion(ShardCheckpoint header) {
    if (header.getFormatVersion() > ShardSnapshots.FORMAT_VERSION) {
      throw corrupt(
          "format version "
              + header.getFormatVersion()
              + " is newer than this pserver reads ("
              + ShardSnapshots.FORMAT_VERSION
              + "): run a newer pserver");
    }
  }

  static float[] floats(ByteString data, int expected, String name) {
    if (data.size() != 4L * expected) {
      throw corrupt(name + " holds " + data.size() + " bytes, expected " + 4L * expected);
    }
    return TensorCodec.decode(data);
  }

  static ServiceException corrupt(String what) {
    return new ServiceException(ErrorReason.BAD_ARGUMENT, "checkpoint is inconsistent: " + what);
  }
}
