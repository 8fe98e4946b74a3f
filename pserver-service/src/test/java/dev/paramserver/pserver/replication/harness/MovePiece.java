package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushPart;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A trainer's push, or a piece of one, as the trainer's {@code Resplit} cuts it: its step, part and
 * {@code origin} (the index it was first sent to, + 1; 0 for a first send), the requests it was cut
 * from ({@code resent_from}, the refused one last), and its gradients: dense blocks of {@link
 * MoveHistory#ID} and rows of {@link MoveHistory#EMB}.
 */
record MovePiece(
    long step,
    int part,
    int origin,
    List<PushPart> resentFrom,
    TreeMap<Integer, float[]> dense,
    TreeMap<Long, float[]> rows) {

  /** This piece split by {@code map}'s owners (ascending), each keeping this identity. */
  Map<Integer, MovePiece> split(SlotMap map) {
    Map<Integer, MovePiece> out = new TreeMap<>();
    long table = ShardPlacement.tableHash(MoveHistory.EMB);
    dense.forEach((b, g) -> at(out, map.ownerOfBlock(MoveHistory.ID, b)).dense.put(b, g));
    rows.forEach((id, g) -> at(out, map.ownerOfRow(table, id)).rows.put(id, g));
    return out;
  }

  private MovePiece at(Map<Integer, MovePiece> out, int owner) {
    return out.computeIfAbsent(
        owner,
        k -> new MovePiece(step, part, origin, resentFrom, new TreeMap<>(), new TreeMap<>()));
  }

  /**
   * The pieces of this piece, refused with MOVED by {@code server}, by owner under {@code map}:
   * each names the first server in {@code origin}, names this request last in {@code resent_from},
   * and has a part of its own from {@code parts} (32768 to 65535, as a trainer's).
   */
  Map<Integer, MovePiece> resplit(int server, SlotMap map, java.util.function.IntSupplier parts) {
    int o = origin != 0 ? origin : server + 1;
    List<PushPart> from = new ArrayList<>(resentFrom);
    from.add(PushPart.newBuilder().setOrigin(o).setPart(part).build());
    MovePiece template = new MovePiece(step, part, o, List.copyOf(from), dense, rows);
    Map<Integer, MovePiece> out = new TreeMap<>();
    template
        .split(map)
        .forEach(
            (owner, p) ->
                out.put(
                    owner,
                    new MovePiece(step, parts.getAsInt(), o, p.resentFrom, p.dense, p.rows)));
    return out;
  }

  /** The request of {@code trainer} carrying this piece. */
  PushGradientsRequest request(int trainer) {
    PushGradientsRequest.Builder r =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t" + trainer)
            .setSession("s" + trainer)
            .setStep(step)
            .setPart(part)
            .setOrigin(origin)
            .addAllResentFrom(resentFrom);
    dense.forEach(
        (b, g) ->
            r.addGradients(
                TensorBlock.newBuilder()
                    .setName(MoveHistory.ID)
                    .setBlock(b)
                    .setDtype(DataType.FLOAT32)
                    .setData(TensorCodec.encode(g))));
    if (!rows.isEmpty()) {
      float[] data = new float[rows.size() * MoveHistory.WIDTH];
      SparseRows.Builder s =
          SparseRows.newBuilder().setName(MoveHistory.EMB).setDtype(DataType.FLOAT32);
      int i = 0;
      for (Map.Entry<Long, float[]> e : rows.entrySet()) {
        s.addRowIds(e.getKey());
        System.arraycopy(e.getValue(), 0, data, i * MoveHistory.WIDTH, MoveHistory.WIDTH);
        i++;
      }
      r.addSparseGradients(s.setData(TensorCodec.encode(data)));
    }
    return r.build();
  }

  @Override
  public String toString() {
    return "step "
        + step
        + " part "
        + part
        + " origin "
        + origin
        + " blocks "
        + dense.keySet()
        + " rows "
        + rows.keySet()
        + (resentFrom.isEmpty()
            ? ""
            : " resent from "
                + resentFrom.stream().map(p -> p.getOrigin() + "/" + p.getPart()).toList());
  }
}
