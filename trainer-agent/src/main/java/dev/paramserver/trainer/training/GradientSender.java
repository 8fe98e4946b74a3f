package dev.paramserver.trainer.training;

import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.StopSignal;
import dev.paramserver.trainer.pserver.ParameterClient;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Sends a gradient and takes the new values in. Without pipelining: push, then pull fresh values,
 * then go on. With pipelining (asynchronous mode), the push and the pull run on a background thread
 * while the next batch is computed on the values as they are; the pulled values are taken in before
 * the next push, so the model is at most one push behind, as it may be in asynchronous SGD anyway.
 */
final class GradientSender implements AutoCloseable {
  private final ParameterClient client;
  private final Parameters values;
  private final StopSignal stop;
  private final Parameters incoming;
  private Parameters spare;
  private ExecutorService comm;
  private Future<?> inFlight;

  /**
   * @param pipeline push and pull in the background
   */
  GradientSender(
      ParameterClient client, Model model, Parameters values, StopSignal stop, boolean pipeline) {
    this.client = client;
    this.values = values;
    this.stop = stop;
    this.incoming = pipeline ? Parameters.zerosLike(model) : null;
    this.spare = pipeline ? Parameters.zerosLike(model) : null;
  }

  /**
   * Sends {@code grads}.
   *
   * @return the gradient buffer to accumulate into next (cleared): {@code grads} itself, or with
   *     pipelining a spare buffer while {@code grads} is being sent
   */
  Parameters send(Parameters grads) {
    if (incoming == null) {
      client.push(grads, values);
      client.pull(values);
      grads.clear();
      return grads;
    }
    awaitInFlight();
    Parameters next = spare;
    spare = grads;
    if (comm == null) {
      comm =
          Executors.newSingleThreadExecutor(
              r -> {
                Thread t = new Thread(r, "push-pull");
                t.setDaemon(true);
                return t;
              });
    }
    inFlight =
        comm.submit(
            () -> {
              client.push(grads, values);
              client.pull(incoming);
            });
    next.clear();
    return next;
  }

  /** Waits for the push and pull in flight, then takes the pulled values in. */
  void awaitInFlight() {
    if (inFlight == null) {
      return;
    }
    try {
      stop.await(inFlight, "waiting for a push");
    } finally {
      inFlight = null;
    }
    Gradients.copyDense(incoming, values);
  }

  /** Stops the background thread of the pipeline. */
  @Override
  public void close() {
    if (comm != null) {
      comm.shutdownNow();
    }
  }
}
