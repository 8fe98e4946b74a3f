package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.ParameterSpec;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads of a shard for a read replica (serving-service), which holds a copy of the shard and
 * applies its primary's records: rows with whether the table holds them, the row width and the
 * definitions of the parameters. The caller keeps records from being applied meanwhile.
 */
public final class ShardLookups {
  private ShardLookups() {}

  /** The width of sparse table {@code table}, or -1 when the shard has no such table. */
  public static int width(ParameterShard shard, String table) {
    SparseTable t = shard.tables().get(table);
    return t == null ? -1 : t.width();
  }

  /**
   * Copies row {@code id} of {@code table} to {@code out} at {@code offset}; a row the table does
   * not hold reads as its initial values (what a trainer's first pull gets).
   *
   * @return false when the table holds no row {@code id}
   * @throws IllegalArgumentException when the shard has no table {@code table}
   */
  public static boolean readRow(ParameterShard shard, String table, long id, float[] out, int at) {
    SparseTable t = shard.tables().get(table);
    if (t == null) {
      throw new IllegalArgumentException("no sparse table '" + table + "'");
    }
    return t.read(id, out, at);
  }

  /** The definitions of the shard's parameters (dense and sparse), by name. */
  public static Map<String, ParameterSpec> parameters(ParameterShard shard) {
    Map<String, ParameterSpec> out = new TreeMap<>();
    shard.parameters().forEach((name, p) -> out.put(name, p.spec));
    return out;
  }

  /** The names of the shard's sparse tables. */
  public static List<String> tables(ParameterShard shard) {
    return List.copyOf(shard.tables().keySet());
  }
}
