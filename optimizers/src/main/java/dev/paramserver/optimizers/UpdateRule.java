package dev.paramserver.optimizers;

/**
 * The core of an optimizer: how one gradient changes the weights and the rule's state vectors.
 * Implementations are simple loops over float arrays so the JIT can vectorise them.
 */
public interface UpdateRule {

  /** Number of state vectors ("slots") the rule keeps beside the weights, each as long as them. */
  int slots();

  /** Initial value of every slot element (Adagrad's initial accumulator; 0 elsewhere). */
  default float initialSlotValue() {
    return 0f;
  }

  /**
   * Applies one gradient.
   *
   * @param w the weights, updated in place ({@code w.length} elements)
   * @param g the gradient, {@code w.length} elements from {@code gOff}; may be modified
   * @param gOff offset of the first gradient element in {@code g}
   * @param slots the state vectors, {@link #slots()} of them, each {@code w.length} long
   * @param t the 1-based number of this update (for bias correction)
   * @param lr the learning rate for this update (after the schedule)
   */
  void apply(float[] w, float[] g, int gOff, float[][] slots, long t, float lr);
}
