package dev.paramserver.psctl.convert;

/** Parses class labels. */
final class Labels {
  private Labels() {}

  /** A class index: an integer >= 0, written as "3" or "3.0"; null if the text is not one. */
  static Integer classIndex(String text) {
    double v;
    try {
      v = Double.parseDouble(text);
    } catch (NumberFormatException e) {
      return null;
    }
    if (v < 0 || v > Integer.MAX_VALUE || v != Math.rint(v)) {
      return null;
    }
    return (int) v;
  }
}
