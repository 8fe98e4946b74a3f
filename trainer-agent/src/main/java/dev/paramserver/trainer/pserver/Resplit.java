package dev.paramserver.trainer.pserver;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.PushPart;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongToIntFunction;

/**
 * Cuts a request a pserver refused with MOVED (nothing of it applied) into pieces, one per owner
 * under a newer {@link Routing}, and puts the pieces' answers back together as the refused
 * request's answer would have been (docs/explanation/elastic.md, "Trainers").
 *
 * <p>A push piece keeps the refused push's trainer id, session, step, flags and {@code
 * acknowledged_through} (which refers to the origin server), names the server the push was first
 * sent to in {@code origin} (its index + 1; a piece of a piece keeps the first origin), so a
 * pserver never takes it for a duplicate of its own part of the same step, and gets a part number
 * of its own ({@link ResentParts}): two pieces of one step may reach one server. It names the
 * requests it was cut from in {@code resent_from} (the refused one last): a server that knows one
 * of them as applied answers it as a duplicate, which matters when the refusal was not the server's
 * own answer but its absence (it exited after a shrink, maybe after applying the push: {@link
 * PserverDirectory#emptiedAndGone}). Rows are cut by their encoded bytes: no value is decoded or
 * rounded again.
 */
public final class Resplit {
  private Resplit() {}

  /**
   * The pieces of {@code refused}, by owner (ascending) under {@code routing}, each with a part
   * number of its own from {@code parts} (for the refused request's step).
   */
  public static List<Planned<PushGradientsRequest>> push(
      Planned<PushGradientsRequest> refused, Routing routing, LongToIntFunction parts) {
    PushGradientsRequest req = refused.request();
    Map<Integer, PushGradientsRequest.Builder> pieces = new TreeMap<>();
    int origin = req.getOrigin() != 0 ? req.getOrigin() : refused.pserver() + 1;
    // the refused request's identity goes with the pieces: a server that knows it was applied
    // (it travels with the slots) answers a piece as a duplicate
    PushGradientsRequest.Builder template =
        req.toBuilder()
            .clearGradients()
            .clearSparseGradients()
            .setOrigin(origin)
            .addResentFrom(PushPart.newBuilder().setOrigin(origin).setPart(req.getPart()));
    for (TensorBlock g : req.getGradientsList()) {
      int owner = blockOwner(routing, g.getName(), g.getBlock());
      pieces.computeIfAbsent(owner, k -> template.clone()).addGradients(g);
    }
    for (SparseRows rows : req.getSparseGradientsList()) {
      splitRows(rows, routing)
          .forEach(
              (owner, part) ->
                  pieces.computeIfAbsent(owner, k -> template.clone()).addSparseGradients(part));
    }
    List<Planned<PushGradientsRequest>> out = new ArrayList<>();
    pieces.forEach(
        (owner, piece) ->
            out.add(new Planned<>(owner, piece.setPart(parts.applyAsInt(req.getStep())).build())));
    if (out.isEmpty()) {
      // a push without gradients (a keep-pace push): it still goes, as one piece
      out.add(
          new Planned<>(
              refused.pserver(), template.setPart(parts.applyAsInt(req.getStep())).build()));
    }
    return out;
  }

  /** The pieces of a refused pull, by owner (ascending) under {@code routing}. */
  public static List<Planned<PullParametersRequest>> pull(
      Planned<PullParametersRequest> refused, Routing routing) {
    PullParametersRequest req = refused.request();
    Map<Integer, PullParametersRequest.Builder> pieces = new TreeMap<>();
    // the pieces ask for every row (no held rows left out): their answer is taken whole
    PullParametersRequest.Builder template =
        req.toBuilder().clearBlocks().clearSparseRows().clearWriterTag();
    for (BlockRef b : req.getBlocksList()) {
      int owner = blockOwner(routing, b.getName(), b.getBlock());
      pieces.computeIfAbsent(owner, k -> template.clone()).addBlocks(b);
    }
    for (SparseRowsRef ref : req.getSparseRowsList()) {
      Map<Integer, SparseRowsRef.Builder> byOwner = new TreeMap<>();
      for (long id : ref.getRowIdsList()) {
        byOwner
            .computeIfAbsent(
                routing.ownerOfRow(ref.getName(), id),
                k -> SparseRowsRef.newBuilder().setName(ref.getName()))
            .addRowIds(id);
      }
      byOwner.forEach(
          (owner, part) ->
              pieces.computeIfAbsent(owner, k -> template.clone()).addSparseRows(part));
    }
    List<Planned<PullParametersRequest>> out = new ArrayList<>();
    pieces.forEach((owner, piece) -> out.add(new Planned<>(owner, piece.build())));
    return out;
  }

  /**
   * The answer the refused push would have had: the pieces' returned blocks and rows (in piece
   * order), duplicate only if every piece was one (each piece was applied exactly once either way).
   */
  public static PushGradientsResponse mergePush(List<PushGradientsResponse> answers) {
    PushGradientsResponse.Builder out = PushGradientsResponse.newBuilder();
    boolean duplicate = !answers.isEmpty();
    for (PushGradientsResponse a : answers) {
      out.setStep(Math.max(out.getStep(), a.getStep()));
      out.addAllBlocks(a.getBlocksList()).addAllSparseRows(a.getSparseRowsList());
      duplicate &= a.getDuplicate();
    }
    return out.setDuplicate(duplicate).build();
  }

  /** The answer the refused pull would have had. */
  public static PullParametersResponse mergePull(List<PullParametersResponse> answers) {
    PullParametersResponse.Builder out = PullParametersResponse.newBuilder();
    for (PullParametersResponse a : answers) {
      out.setStep(Math.max(out.getStep(), a.getStep()));
      out.addAllBlocks(a.getBlocksList()).addAllSparseRows(a.getSparseRowsList());
    }
    return out.build();
  }

  private static int blockOwner(Routing routing, String name, int block) {
    int owner = routing.ownerOfBlock(name, block);
    if (owner < 0) {
      throw new IllegalStateException(
          "block " + name + "#" + block + " was refused with MOVED but " + routing + " lacks it");
    }
    return owner;
  }

  /** The rows of {@code rows} by owner, each keeping its encoded values. */
  static Map<Integer, SparseRows> splitRows(SparseRows rows, Routing routing) {
    int n = rows.getRowIdsCount();
    Map<Integer, SparseRows> out = new TreeMap<>();
    if (n == 0) {
      return out;
    }
    if (rows.getData().size() % n != 0) {
      throw new IllegalStateException(
          "rows of "
              + rows.getName()
              + ": "
              + rows.getData().size()
              + " bytes do not divide into "
              + n
              + " rows");
    }
    int rowBytes = rows.getData().size() / n;
    int[] owner = new int[n];
    Map<Integer, Integer> counts = new TreeMap<>();
    for (int i = 0; i < n; i++) {
      owner[i] = routing.ownerOfRow(rows.getName(), rows.getRowIds(i));
      counts.merge(owner[i], 1, Integer::sum);
    }
    byte[] all = rows.getData().toByteArray();
    for (Map.Entry<Integer, Integer> e : counts.entrySet()) {
      int o = e.getKey();
      byte[] data = new byte[e.getValue() * rowBytes];
      SparseRows.Builder part =
          SparseRows.newBuilder().setName(rows.getName()).setDtype(rows.getDtype());
      int at = 0;
      for (int i = 0; i < n; i++) {
        if (owner[i] == o) {
          part.addRowIds(rows.getRowIds(i));
          System.arraycopy(all, i * rowBytes, data, at, rowBytes);
          at += rowBytes;
        }
      }
      out.put(o, part.setData(ByteString.copyFrom(data)).build());
    }
    return out;
  }
}
