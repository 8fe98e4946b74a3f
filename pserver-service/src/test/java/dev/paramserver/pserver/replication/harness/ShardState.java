package dev.paramserver.pserver.replication.harness;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.AppliedPushes;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What two copies of a shard must agree on bit for bit: the step, the init id, every dense block's
 * values, optimizer slots (Adam's moments) and update count, every sparse row's values, slots and
 * update count, each table's admission sketch, and the applied-push records. Rows are keyed by id
 * (a table's row order is its storage order); the checkpoint's index, time and log segment are
 * where a copy lives, not what it holds.
 */
public record ShardState(
    long step,
    String initId,
    Map<String, Cell> cells,
    List<AppliedPushes> applied,
    int parameters,
    Map<String, List<ByteString>> sketches) {

  /** One dense block or sparse row: raw float32 bits of its values and of each optimizer slot. */
  record Cell(ByteString values, List<ByteString> slots, long updates) {}

  public static ShardState of(ShardCheckpoint cp) {
    Map<String, Cell> cells = new TreeMap<>();
    Map<String, List<ByteString>> sketches = new TreeMap<>();
    for (BlockCheckpoint b : cp.getBlocksList()) {
      cells.put(
          "dense " + b.getName() + "#" + b.getBlock(),
          new Cell(b.getValues(), b.getSlotsList(), b.getUpdates()));
    }
    for (SparseTableCheckpoint t : cp.getSparseTablesList()) {
      if (t.getAdmissionSketchCount() > 0) {
        List<ByteString> sketch = new ArrayList<>(t.getAdmissionSketchList());
        t.getAdmissionIncrementsList()
            .forEach(n -> sketch.add(ByteString.copyFromUtf8("increments " + n)));
        sketches.put(t.getName(), sketch);
      }
      int rowBytes = 4 * t.getWidth();
      for (int i = 0; i < t.getRowIdsCount(); i++) {
        int from = i * rowBytes;
        List<ByteString> slots = new ArrayList<>();
        for (ByteString s : t.getSlotsList()) {
          slots.add(s.substring(from, from + rowBytes));
        }
        cells.put(
            "sparse " + t.getName() + "[" + t.getRowIds(i) + "]",
            new Cell(t.getValues().substring(from, from + rowBytes), slots, t.getRowUpdates(i)));
      }
    }
    return new ShardState(
        cp.getStep(),
        cp.getInitId(),
        cells,
        cp.getAppliedList(),
        cp.getParametersCount(),
        sketches);
  }

  /** What differs between this copy and {@code other} (empty when they are bit-identical). */
  public List<String> differences(ShardState other) {
    List<String> out = new ArrayList<>();
    if (step != other.step) {
      out.add("step " + step + " vs " + other.step);
    }
    if (!Objects.equals(initId, other.initId)) {
      out.add("init id " + initId + " vs " + other.initId);
    }
    if (parameters != other.parameters) {
      out.add("parameters " + parameters + " vs " + other.parameters);
    }
    if (!sketches.equals(other.sketches)) {
      out.add("admission sketches differ: " + sketches.keySet() + " vs " + other.sketches.keySet());
    }
    if (!applied.equals(other.applied)) {
      out.add("applied pushes " + applied + " vs " + other.applied);
    }
    TreeMap<String, Cell> all = new TreeMap<>(cells);
    other.cells.forEach(all::putIfAbsent);
    for (String key : all.keySet()) {
      Cell a = cells.get(key);
      Cell b = other.cells.get(key);
      if (a == null || b == null) {
        out.add(key + (a == null ? " missing on the left" : " missing on the right"));
      } else if (!a.equals(b)) {
        out.add(key + ": " + describe(a) + " vs " + describe(b));
      }
    }
    return out;
  }

  private static String describe(Cell c) {
    return "updates=" + c.updates() + " values=" + floats(c.values());
  }

  private static String floats(ByteString bytes) {
    java.nio.FloatBuffer f =
        bytes.asReadOnlyByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    StringBuilder s = new StringBuilder("[");
    for (int i = 0; i < f.limit(); i++) {
      s.append(i == 0 ? "" : ", ").append(f.get(i));
    }
    return s.append(']').toString();
  }
}
