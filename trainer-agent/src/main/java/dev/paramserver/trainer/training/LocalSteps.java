package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.BlockLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The trainer's own optimizer step on its copy of the dense parameters, so that a batch is computed
 * on values that include every earlier batch of this trainer, acknowledged by the pservers or not
 * (read-my-writes; see {@link GradientSender}).
 *
 * <p>The step is the one the pservers apply, built from the same {@code OptimizerConfig} and block
 * by block as they cut the parameters (so per-block clipping matches): plain SGD is exactly what
 * the pserver does. Optimizers with state (momentum, Adam, Adagrad, RMSprop, Adadelta) keep a local
 * copy of their slots here, fed by this trainer's batches only; the pservers' state sees the pushes
 * (of every trainer, several batches summed per push), so the local step approximates theirs, and
 * each answer from the pservers replaces the local values with theirs (plus the local steps they
 * have not seen yet). Sparse rows get no local step: they are pulled for each batch.
 */
final class LocalSteps {
  /** One block of a dense parameter with its optimizer state. */
  private record Block(
      String name, int offset, float[] weights, float[] grads, float[][] slots, long[] updates) {}

  private final List<Block> blocks = new ArrayList<>();
  private final List<ParameterOptimizer> optimizers = new ArrayList<>();

  /** Local steps for the dense parameters of {@code specs} (sparse specs are skipped). */
  LocalSteps(List<ParameterSpec> specs) {
    for (ParameterSpec spec : specs) {
      if (spec.getSparse()) {
        continue;
      }
      ParameterOptimizer opt = ParameterOptimizer.of(spec.getName(), spec.getOptimizer());
      long elements = 1;
      for (long d : spec.getShapeList()) {
        elements *= d;
      }
      int blockSize = spec.getBlockSize();
      for (var b : BlockLayout.blocks(spec.getName(), elements, blockSize)) {
        blocks.add(
            new Block(
                spec.getName(),
                (int) b.offset(),
                new float[b.length()],
                new float[b.length()],
                opt.newSlots(b.length()),
                new long[1]));
        optimizers.add(opt);
      }
    }
  }

  /**
   * Applies one step of {@code grads} to the dense values of {@code values}. {@code grads} is not
   * changed (clipping and weight decay work on a copy).
   */
  void apply(Parameters values, Parameters grads) {
    for (int i = 0; i < blocks.size(); i++) {
      Block b = blocks.get(i);
      float[] w = values.dense(b.name());
      float[] g = grads.dense(b.name());
      int n = b.weights().length;
      System.arraycopy(w, b.offset(), b.weights(), 0, n);
      System.arraycopy(g, b.offset(), b.grads(), 0, n);
      optimizers.get(i).update(b.weights(), b.grads(), 0, b.slots(), b.updates()[0]++);
      System.arraycopy(b.weights(), 0, w, b.offset(), n);
    }
  }
}
