package dev.paramserver.psctl.data;

import dev.paramserver.proto.v1.Example;

/** A short, one-line rendering of an {@link Example} for humans. */
public final class ExampleFormat {
  private static final int SHOWN = 8;

  private ExampleFormat() {}

  /**
   * E.g. {@code label=3 dense[32]=[0.12, -1.5, ... +24] sparse[2]=[17:1.0, 99:0.5]}; at most eight
   * values of each part are shown.
   */
  public static String shortForm(Example e) {
    StringBuilder sb = new StringBuilder("label=").append(e.getLabel());
    if (e.getDenseCount() > 0) {
      sb.append(" dense[").append(e.getDenseCount()).append("]=[");
      for (int i = 0; i < Math.min(SHOWN, e.getDenseCount()); i++) {
        sb.append(i == 0 ? "" : ", ").append(e.getDense(i));
      }
      more(sb, e.getDenseCount()).append(']');
    }
    if (e.getSparseIdsCount() > 0) {
      sb.append(" sparse[").append(e.getSparseIdsCount()).append("]=[");
      for (int i = 0; i < Math.min(SHOWN, e.getSparseIdsCount()); i++) {
        sb.append(i == 0 ? "" : ", ").append(e.getSparseIds(i)).append(':');
        sb.append(i < e.getSparseValuesCount() ? e.getSparseValues(i) : 1.0f);
      }
      more(sb, e.getSparseIdsCount()).append(']');
    }
    return sb.toString();
  }

  private static StringBuilder more(StringBuilder sb, int count) {
    return count > SHOWN ? sb.append(", ... +").append(count - SHOWN) : sb;
  }
}
