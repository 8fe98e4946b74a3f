package dev.paramserver.trainer.training;

import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.StopSignal;
import dev.paramserver.trainer.pserver.ParameterClient;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Sends a gradient and takes the new values in. Without pipelining: push and pull (in one round
 * trip where the mode allows), then go on. With pipelining (asynchronous mode), pushes and pulls
 * run on a background thread, in order, while the next batches are computed on the values as they
 * are. While a push is in flight, up to {@code maxLag} further gradients are held, summed, and
 * leave together in the next push, so the training thread does not wait for the wire; the values a
 * batch is computed on are at most {@code maxLag + 2} pushes old, as they may be in asynchronous
 * SGD anyway. At most {@link #MAX_IN_FLIGHT} pushes are queued or in flight.
 *
 * <p>A push that finds a pserver without state re-initialises it, on the background thread, from
 * values of its own (see {@link #latestForPush}), never from the training thread's {@code values},
 * which that thread overwrites with each pull taken in and whose sparse tables it replaces with
 * each batch.
 */
final class GradientSender implements AutoCloseable {
  static final int MAX_IN_FLIGHT = 2;

  /** The longest {@link #close} waits for the pushes in flight. */
  static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

  /** A push (with its pull) handed to the background thread, and its buffers. */
  private record Sent(Future<?> future, Parameters grads, Parameters pulled) {}

  private final ParameterClient client;
  private final Model model;
  private final Parameters values;
  private final StopSignal stop;
  private final boolean pipeline;
  private final int maxLag;
  // Gradients summed while pushes are in flight, heldCount sends of them (pipelining only).
  private Parameters held;
  private int heldCount;
  private final Deque<Sent> sent = new ArrayDeque<>();
  private final Deque<Parameters> freeGrads = new ArrayDeque<>();
  private final Deque<Parameters> freePulled = new ArrayDeque<>();
  // The values pulled by the last push taken in (copied into values): kept out of freePulled while
  // a push started after it may re-initialise a pserver from them. At first a copy of values.
  private Parameters lastTaken;
  private ExecutorService comm;

  /**
   * @param pipeline push and pull in the background
   * @param maxLag with pipelining, how many gradients may wait (summed) for the pushes in flight
   */
  GradientSender(
      ParameterClient client,
      Model model,
      Parameters values,
      StopSignal stop,
      boolean pipeline,
      int maxLag) {
    this.client = client;
    this.model = model;
    this.values = values;
    this.stop = stop;
    this.pipeline = pipeline;
    this.maxLag = maxLag;
  }

  /**
   * Sends {@code grads} (or, with pipelining, holds it while pushes are in flight).
   *
   * @return the gradient buffer to accumulate into next (cleared): {@code grads} itself, or with
   *     pipelining another buffer while {@code grads} is being sent
   */
  Parameters send(Parameters grads) {
    if (!pipeline) {
      client.pushAndPull(grads, values, values);
      grads.clear();
      return grads;
    }
    takeAnswered();
    if (!sent.isEmpty() && heldCount < maxLag) {
      if (held == null) {
        held = freeGrads();
      }
      Gradients.add(held, grads);
      heldCount++;
      grads.clear();
      return grads;
    }
    Parameters out = grads;
    if (heldCount > 0) {
      Gradients.add(held, grads);
      out = held;
      held = grads;
      held.clear();
      heldCount = 0;
    }
    start(out);
    return freeGrads();
  }

  /**
   * Sends the gradients held, without waiting.
   *
   * @return completes once every gradient given so far was pushed (and acknowledged)
   */
  Future<?> flush() {
    if (!pipeline) {
      return CompletableFuture.completedFuture(null);
    }
    if (heldCount > 0) {
      Parameters out = held;
      held = null;
      heldCount = 0;
      start(out);
    }
    return sent.isEmpty() ? CompletableFuture.completedFuture(null) : sent.peekLast().future();
  }

  /** Sends what is held, waits for every push in flight, then takes the pulled values in. */
  void awaitInFlight() {
    flush();
    while (!sent.isEmpty()) {
      stop.await(sent.peekFirst().future(), "waiting for a push");
      takeAnswered();
    }
  }

  private void start(Parameters out) {
    while (sent.size() >= MAX_IN_FLIGHT) {
      stop.await(sent.peekFirst().future(), "waiting for a push");
      takeAnswered();
    }
    if (comm == null) {
      comm =
          Executors.newSingleThreadExecutor(
              r -> {
                Thread t = new Thread(r, "push-pull");
                t.setDaemon(true);
                return t;
              });
    }
    Parameters latest = latestForPush();
    Parameters pulled = freePulled.isEmpty() ? Parameters.zerosLike(model) : freePulled.pop();
    sent.addLast(new Sent(comm.submit(() -> client.pushAndPull(out, latest, pulled)), out, pulled));
  }

  /**
   * The values a push about to start re-initialises a pserver with, if it finds one without state:
   * one consistent set, assembled without copying. Dense: what the push before it pulled, complete
   * by the time this push runs (the pushes run in order on one thread) and written by nobody until
   * this push was taken in: {@link #takeAnswered} frees a pulled buffer only once the next push was
   * taken. Sparse: the tables of the batch just trained, which the training thread replaces for the
   * next batch and never changes again (see {@code TaskTrainer}).
   */
  private Parameters latestForPush() {
    Parameters dense = sent.isEmpty() ? lastTaken : sent.peekLast().pulled();
    if (dense == null) {
      // the first push: the only copy, once per sender
      dense = Parameters.zerosLike(model);
      Gradients.copyDense(values, dense);
      lastTaken = dense;
    }
    Parameters latest = new Parameters();
    for (String name : dense.denseNames()) {
      latest.putDense(name, dense.dense(name));
    }
    for (String t : values.sparseNames()) {
      latest.putSparse(t, values.sparse(t));
    }
    return latest;
  }

  /**
   * Takes in the values of the pushes answered, oldest first, and frees their buffers. A push that
   * failed (the trainer stops) fails here.
   */
  private void takeAnswered() {
    while (!sent.isEmpty() && sent.peekFirst().future().isDone()) {
      Sent s = sent.pollFirst();
      stop.await(s.future(), "waiting for a push");
      Gradients.copyDense(s.pulled(), values);
      s.grads().clear();
      freeGrads.push(s.grads());
      // the push after s may still re-initialise from the buffer s pulled: free the one before
      if (lastTaken != null) {
        freePulled.push(lastTaken);
      }
      lastTaken = s.pulled();
    }
  }

  private Parameters freeGrads() {
    return freeGrads.isEmpty() ? Parameters.zerosLike(model) : freeGrads.pop();
  }

  /**
   * Stops the background thread of the pipeline once the pushes in flight were answered (at most
   * {@link #CLOSE_WAIT}): interrupting one that a pserver already applied would count it as dropped
   * although it took effect. A push still retrying by then (its pserver is down, or the trainer
   * stops) is interrupted.
   */
  @Override
  public void close() {
    if (comm != null) {
      comm.shutdown();
      try {
        if (!comm.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
          comm.shutdownNow();
        }
      } catch (InterruptedException e) {
        comm.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
  }
}
