package dev.paramserver.tensor;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;
import java.util.zip.CRC32;

/**
 * Which pserver owns which block: a deterministic, size-balanced rule. Blocks are taken largest
 * first (ties broken by a hash of the block id, then by the id) and each goes to the pserver
 * holding the fewest bytes so far (ties to the lowest index). Every trainer computes the same
 * placement from the same parameter list. Sparse rows go to {@code hash(table, row) mod N}.
 */
public final class ShardPlacement {
  private final int pservers;
  private final Map<String, Integer> owners = new HashMap<>();
  private final List<List<BlockSpec>> byServer = new ArrayList<>();
  private final long[] bytes;

  private ShardPlacement(int pservers) {
    this.pservers = pservers;
    this.bytes = new long[pservers];
    for (int i = 0; i < pservers; i++) {
      byServer.add(new ArrayList<>());
    }
  }

  public static ShardPlacement place(List<BlockSpec> blocks, int pservers) {
    if (pservers <= 0) {
      throw new IllegalArgumentException(
          "need at least one pserver to place blocks, got " + pservers);
    }
    ShardPlacement p = new ShardPlacement(pservers);
    List<BlockSpec> order = new ArrayList<>(blocks);
    order.sort(
        Comparator.comparingLong(BlockSpec::bytes)
            .reversed()
            .thenComparingLong(b -> hash(b.id()))
            .thenComparing(BlockSpec::id));
    for (BlockSpec b : order) {
      int best = 0;
      for (int i = 1; i < pservers; i++) {
        if (p.bytes[i] < p.bytes[best]) {
          best = i;
        }
      }
      if (p.owners.putIfAbsent(b.id(), best) != null) {
        throw new IllegalArgumentException("block " + b.id() + " is listed twice");
      }
      p.bytes[best] += b.bytes();
      p.byServer.get(best).add(b);
    }
    p.sortEach();
    return p;
  }

  /**
   * The placement that gives each block to {@code owner.applyAsInt(block)} (an elastic map's), in
   * the same shape as {@link #place}'s.
   */
  public static ShardPlacement assigned(
      List<BlockSpec> blocks, int pservers, ToIntFunction<BlockSpec> owner) {
    ShardPlacement p = new ShardPlacement(pservers);
    for (BlockSpec b : blocks) {
      int o = owner.applyAsInt(b);
      if (o < 0 || o >= pservers) {
        throw new IllegalArgumentException(
            "block " + b.id() + " placed on pserver " + o + " of " + pservers);
      }
      if (p.owners.putIfAbsent(b.id(), o) != null) {
        throw new IllegalArgumentException("block " + b.id() + " is listed twice");
      }
      p.bytes[o] += b.bytes();
      p.byServer.get(o).add(b);
    }
    p.sortEach();
    return p;
  }

  private void sortEach() {
    for (List<BlockSpec> l : byServer) {
      l.sort(Comparator.comparing(BlockSpec::name).thenComparingInt(BlockSpec::block));
    }
  }

  public int pservers() {
    return pservers;
  }

  /** The pserver that owns the block. */
  public int owner(String name, int block) {
    Integer o = owners.get(name + "#" + block);
    if (o == null) {
      throw new IllegalArgumentException("block " + name + "#" + block + " is not placed");
    }
    return o;
  }

  /** Blocks owned by one pserver, ordered by name and block. */
  public List<BlockSpec> blocksOf(int pserver) {
    return Collections.unmodifiableList(byServer.get(pserver));
  }

  /** Bytes placed on one pserver. */
  public long bytesOf(int pserver) {
    return bytes[pserver];
  }

  /** The pserver that owns a row of a sparse table. */
  public static int ownerOfRow(String table, long row, int pservers) {
    return ownerOfRow(tableHash(table), row, pservers);
  }

  /**
   * {@link #ownerOfRow(String, long, int)} with the table's {@link #tableHash} computed once: for
   * callers that route many rows of one table.
   */
  public static int ownerOfRow(long tableHash, long row, int pservers) {
    long h = row * 0x9E3779B97F4A7C15L ^ tableHash;
    h ^= h >>> 31;
    return (int) Math.floorMod(h, (long) pservers);
  }

  /** The table's part of the row routing: CRC-32 of its UTF-8 name (0..2^32-1). */
  public static long tableHash(String table) {
    return hash(table);
  }

  private static long hash(String s) {
    CRC32 crc = new CRC32();
    crc.update(s.getBytes(StandardCharsets.UTF_8));
    return crc.getValue();
  }
}
