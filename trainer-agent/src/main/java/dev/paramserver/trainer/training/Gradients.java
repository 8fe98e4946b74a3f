package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;

/** Arithmetic on gradients held as {@link Parameters}: dense arrays and sparse rows. */
final class Gradients {
  private Gradients() {}

  /** {@code into += from}, dense and sparse (rows missing from {@code into} are added). */
  static void add(Parameters into, Parameters from) {
    for (String name : into.denseNames()) {
      add(into.dense(name), from.dense(name));
    }
    for (String t : into.sparseNames()) {
      Parameters.SparseTable to = into.sparse(t);
      from.sparse(t).forEach((id, row) -> add(to.row(id), row));
    }
  }

  private static void add(float[] a, float[] b) {
    for (int i = 0; i < a.length; i++) {
      a[i] += b[i];
    }
  }

  /** {@code p *= f}, dense and sparse. */
  static void scale(Parameters p, float f) {
    for (String name : p.denseNames()) {
      scale(p.dense(name), f);
    }
    for (String t : p.sparseNames()) {
      p.sparse(t).forEach((id, row) -> scale(row, f));
    }
  }

  private static void scale(float[] a, float f) {
    for (int i = 0; i < a.length; i++) {
      a[i] *= f;
    }
  }

  /** Copies the dense values of {@code from} into {@code to}. */
  static void copyDense(Parameters from, Parameters to) {
    for (String name : to.denseNames()) {
      float[] src = from.dense(name);
      System.arraycopy(src, 0, to.dense(name), 0, src.length);
    }
  }

  /**
   * {@code values = pulled + (values - base)}, dense: the pservers' values with the changes made to
   * {@code values} since it was {@code base}.
   */
  static void rebaseDense(Parameters values, Parameters pulled, Parameters base) {
    for (String name : values.denseNames()) {
      float[] v = values.dense(name);
      float[] p = pulled.dense(name);
      float[] b = base.dense(name);
      for (int i = 0; i < v.length; i++) {
        v[i] = p[i] + (v[i] - b[i]);
      }
    }
  }
}
