package dev.paramserver.psctl.data;

import dev.paramserver.proto.v1.Example;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;

/** Counts records, classes and the feature width of the examples that pass through it. */
public final class DatasetStats {
  private final Map<Integer, Long> classes = new TreeMap<>();
  private long records;
  private int denseWidth;
  private long maxSparseId = -1;

  public void add(Example e) {
    records++;
    classes.merge(e.getLabel(), 1L, Long::sum);
    denseWidth = Math.max(denseWidth, e.getDenseCount());
    for (int i = 0; i < e.getSparseIdsCount(); i++) {
      maxSparseId = Math.max(maxSparseId, e.getSparseIds(i));
    }
  }

  /** The largest dense feature count seen. */
  public int denseWidth() {
    return denseWidth;
  }

  public long records() {
    return records;
  }

  /** Records per class label, sorted by label. */
  public Map<Integer, Long> classes() {
    return classes;
  }

  /** Dense width, or for sparse data the largest id plus one. */
  public long featureCount() {
    return Math.max(denseWidth, maxSparseId + 1);
  }

  /** "32 dense" or "1048576 sparse ids (largest id + 1)". */
  public String describeFeatures() {
    if (maxSparseId < 0) {
      return denseWidth + " dense";
    }
    String sparse = (maxSparseId + 1) + " sparse ids (largest id + 1)";
    return denseWidth > 0 ? denseWidth + " dense + " + sparse : sparse;
  }

  /** "3 (0: 500, 1: 300, 2: 200)". */
  public String describeClasses() {
    StringJoiner j = new StringJoiner(", ", classes.size() + " (", ")");
    int shown = 0;
    for (Map.Entry<Integer, Long> e : classes.entrySet()) {
      if (shown++ == 20) {
        j.add("...");
        break;
      }
      j.add(e.getKey() + ": " + e.getValue());
    }
    return j.toString();
  }
}
