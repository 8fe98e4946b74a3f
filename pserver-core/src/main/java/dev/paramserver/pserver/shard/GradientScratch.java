package dev.paramserver.pserver.shard;

import java.util.Arrays;

/**
 * Per-thread arrays a push's dense and sparse gradients are decoded into when the push is applied
 * on the thread that validated it and nothing reads them afterwards (asynchronous mode): slot
 * {@code k} holds the {@code k}-th gradient of the push being applied, reused by the thread's next
 * push. An array is at least as long as asked (rows are read at {@code i * width}, a block's
 * gradient is its first elements); one larger than {@value #MAX_FLOATS} floats is not kept, nor one
 * that would take a thread's kept arrays past {@value #MAX_KEPT_FLOATS} floats (a push of many
 * large blocks allocates the rest).
 */
final class GradientScratch {
  static final int MAX_FLOATS = 256 << 10;
  static final int MAX_KEPT_FLOATS = 1 << 20;
  private static final ThreadLocal<GradientScratch> OF_THREAD =
      ThreadLocal.withInitial(GradientScratch::new);

  private float[][] slots = new float[4][];
  private long kept;

  GradientScratch() {}

  /** This thread's scratch. */
  static GradientScratch ofThread() {
    return OF_THREAD.get();
  }

  /** An array of at least {@code floats} floats for slot {@code k}, its contents undefined. */
  float[] floats(int k, int floats) {
    if (floats > MAX_FLOATS) {
      return new float[floats];
    }
    if (k >= slots.length) {
      slots = Arrays.copyOf(slots, Math.max(k + 1, slots.length * 2));
    }
    float[] a = slots[k];
    if (a == null || a.length < floats) {
      int old = a == null ? 0 : a.length;
      int size = Math.max(floats, Math.min(MAX_FLOATS, old * 2));
      if (kept - old + size > MAX_KEPT_FLOATS) {
        return new float[floats];
      }
      a = new float[size];
      slots[k] = a;
      kept += size - old;
    }
    return a;
  }
}
