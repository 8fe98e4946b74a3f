package dev.paramserver.pserver.shard;

import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A sparse (row) table: rows of {@code width} floats created on first use, each with its own
 * optimizer state and update count, so memory grows with the rows touched.
 */
final class SparseTable {
  final Parameter parameter;
  private final Map<Long, Row> rows = new ConcurrentHashMap<>();

  SparseTable(Parameter parameter) {
    this.parameter = parameter;
  }

  String name() {
    return parameter.name();
  }

  int width() {
    return parameter.width;
  }

  /** The row, created with the table's initialiser if new. */
  Row row(long id) {
    return rows.computeIfAbsent(id, this::newRow);
  }

  Map<Long, Row> rows() {
    return rows;
  }

  int rowCount() {
    return rows.size();
  }

  /** Puts a restored row (checkpoint load). */
  void putRow(long id, Row row) {
    rows.put(id, row);
  }

  private Row newRow(long id) {
    float[] values = new float[parameter.width];
    float stddev = parameter.spec.getInitStddev();
    if (stddev > 0) {
      // Seeded by (table, row) so every pserver and every restart creates the same row.
      SplittableRandom random = new SplittableRandom(seed(parameter.name(), id));
      for (int i = 0; i < values.length; i++) {
        values[i] = (float) (random.nextGaussian() * stddev);
      }
    }
    return new Row(values, parameter.optimizer.newSlots(values.length), 0);
  }

  static long seed(String table, long row) {
    long h = 1125899906842597L;
    for (int i = 0; i < table.length(); i++) {
      h = 31 * h + table.charAt(i);
    }
    return h * 0x9E3779B97F4A7C15L + row;
  }

  /** One row with its optimizer state; guarded by its monitor. */
  static final class Row {
    final float[] values;
    final float[][] slots;
    long updates;

    Row(float[] values, float[][] slots, long updates) {
      this.values = values;
      this.slots = slots;
      this.updates = updates;
    }
  }
}
