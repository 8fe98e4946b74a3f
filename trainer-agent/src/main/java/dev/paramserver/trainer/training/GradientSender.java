package dev.paramserver.trainer.training;

import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.StreamedPush;
import dev.paramserver.trainer.stop.StopSignal;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Sends a gradient and takes the new values in. Without pipelining: push and pull (in one round
 * trip where the mode allows), then go on. With pipelining (asynchronous mode) the trainer reads
 * its own writes: each gradient is applied at once to the training thread's copy by the trainer's
 * own optimizer step ({@link LocalSteps}), so the next batch is computed on values that include it,
 * and the push and its answer travel meanwhile. A gradient leaves at once when no push is in
 * flight; otherwise it is held, summed with the others held, until the push in flight is answered.
 * At most {@code maxLag} batches are unacknowledged (held or in flight): a batch beyond that waits
 * for the oldest push's answer. Each answer rebases the copy: the values the push pulled, plus the
 * local steps taken since it left ({@code values - base}). With one trainer and plain SGD the
 * values are those of sequential SGD; other trainers' updates are at most one push old.
 *
 * <p>In asynchronous mode the training thread writes each push onto the pservers' push streams
 * itself ({@link ParameterClient#startPush}: no hand-off to another thread; it waits only when a
 * stream's flow control holds it back) and takes the answers in whenever it looks ({@link
 * #takeAnswered}, before each batch) or has to wait. In the other modes (bounded staleness) the
 * push and pull run as unary calls on a background thread.
 *
 * <p>A push that finds a pserver without state re-initialises it from values of its own (see {@link
 * #latestForPush}), never from the training thread's {@code values}, which that thread changes with
 * every batch and whose sparse tables it replaces with each batch.
 */
final class GradientSender implements AutoCloseable {
  /** The most pushes queued or in flight (a flush may start one behind the one in flight). */
  static final int MAX_IN_FLIGHT = 2;

  /**
   * Pushes sent under one writer tag before the next tag: the first push of a row under a new tag
   * is answered with the row whoever changed it last, so a row pushed again and again is read back
   * from its pserver at least once every this many pushes (what float rounding made of summed
   * batches does not accumulate).
   */
  static final int PUSHES_PER_WRITER_TAG = 4096;

  /** The longest {@link #close} waits for the pushes in flight. */
  static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

  /**
   * A push (with its pull) in flight: streamed, or handed to the background thread ({@code
   * streamed} null); completes with {@code future}. Its buffers, the training thread's values when
   * it left ({@code base}, dense only), its sparse rows with the row cache ({@code rows}, else
   * null) and how many batches it carries.
   */
  private record Sent(
      Future<?> future,
      StreamedPush streamed,
      Parameters grads,
      Parameters pulled,
      Parameters base,
      PushRows rows,
      int batches,
      int writerTag) {}

  private final ParameterClient client;
  private final Model model;
  private final Parameters values;
  private final StopSignal stop;
  private final boolean pipeline;
  // pipelined pushes go on the push streams, driven by this (the training) thread
  private final boolean streamed;
  private final int maxLag;
  private final LocalSteps local;
  // sparse rows kept between batches (streamed pushes only), or null: rows pulled per batch
  private final RowCache cache;
  // Gradients summed while a push is in flight, heldCount batches of them (pipelining only).
  private Parameters held;
  private int heldCount;
  // with the row cache: the sparse rows of the gradients held, in flat arrays
  private PushRows heldRows;
  private final Deque<PushRows> freeRows = new ArrayDeque<>();
  private final Deque<Sent> sent = new ArrayDeque<>();
  private final Deque<Parameters> freeGrads = new ArrayDeque<>();
  private final Deque<Parameters> freePulled = new ArrayDeque<>();
  private final Deque<Parameters> freeBases = new ArrayDeque<>();
  // The values pulled by the last push taken in: kept out of freePulled while a push started after
  // it may re-initialise a pserver from them. At first a copy of values.
  private Parameters lastTaken;
  private ExecutorService comm;
  // writer tags (with the row cache, optimizers additive): the run's random seed, the tag's
  // generation and how many pushes the tag in use (the cache's, RowCache#writerTag) was sent with
  private final boolean tagged;
  private final int writerSeed = ThreadLocalRandom.current().nextInt();
  private int writerGeneration;
  private int pushesUnderTag;

  /**
   * @param pipeline push and pull in the background, reading this trainer's own writes
   * @param maxLag with pipelining, how many batches may be unacknowledged (held or in flight)
   */
  GradientSender(
      ParameterClient client,
      Model model,
      Parameters values,
      StopSignal stop,
      boolean pipeline,
      int maxLag) {
    this(client, model, values, stop, pipeline, maxLag, null);
  }

  /**
   * @param cache the trainer's sparse rows, kept between batches, with its local steps and the
   *     pushes' answers applied (streamed pushes only); null: rows are pulled for each batch
   */
  GradientSender(
      ParameterClient client,
      Model model,
      Parameters values,
      StopSignal stop,
      boolean pipeline,
      int maxLag,
      RowCache cache) {
    this.client = client;
    this.model = model;
    this.values = values;
    this.stop = stop;
    this.pipeline = pipeline;
    this.streamed = pipeline && client.streamsPushes();
    this.maxLag = maxLag;
    this.local = pipeline ? new LocalSteps(client.layout().specs()) : null;
    if (cache != null && !streamed) {
      throw new IllegalArgumentException(
          "the row cache needs streamed pushes (asynchronous mode with pipelining)");
    }
    this.cache = cache;
    this.tagged = cache != null && cache.additive();
    if (tagged) {
      nextWriterTag();
    }
  }

  /**
   * A new writer tag: after {@link #PUSHES_PER_WRITER_TAG} pushes, or once a push's answer may have
   * been lost (the pushes sent under the old tag confirm no row any more).
   */
  private void nextWriterTag() {
    int t;
    do {
      long h =
          (((long) writerSeed << 32) | (++writerGeneration & 0xFFFFFFFFL)) * 0x9E3779B97F4A7C15L;
      t = (int) (h ^ (h >>> 29));
    } while (t == 0);
    pushesUnderTag = 0;
    cache.writerTag(t);
  }

  /**
   * Sends {@code grads} (with pipelining: applies it to the values and holds it while a push is in
   * flight). With the row cache, the sparse rows' gradients are those the cache accumulated ({@link
   * RowCache#accumulate}), not {@code grads}' sparse tables.
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
    if (lastTaken == null) {
      // before the first local step: what a pserver re-initialised by the first push gets
      lastTaken = Parameters.zerosLike(model);
      Gradients.copyDense(values, lastTaken);
    }
    local.apply(values, grads);
    // a gradient that leaves at once, alone (nothing held, no push in flight): its base rows are
    // copied in the local step's pass
    Parameters base = heldCount == 0 && sent.isEmpty() ? freeBase() : null;
    if (cache != null) {
      cache.localStep(base != null);
      PushRows rows =
          cache.takeAccumulated(freeRows.isEmpty() ? cache.newPushRows() : freeRows.pop());
      if (heldCount == 0) {
        heldRows = rows;
      } else {
        heldRows.merge(rows);
        freeRows.push(rows);
      }
    }
    Parameters next;
    if (heldCount == 0) {
      next = freeGrads();
      held = grads;
    } else {
      Gradients.add(held, grads);
      grads.clear();
      next = grads;
    }
    heldCount++;
    if (sent.isEmpty()) {
      startHeld(base);
    }
    while (unacknowledged() > maxLag) {
      awaitOldest();
      takeAnswered();
      if (sent.isEmpty() && heldCount > 0) {
        startHeld(null);
      }
    }
    return next;
  }

  /** Batches held or in flight, not yet acknowledged. */
  private int unacknowledged() {
    int n = heldCount;
    for (Sent s : sent) {
      n += s.batches();
    }
    return n;
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
      startHeld(null);
    }
    return sent.isEmpty() ? CompletableFuture.completedFuture(null) : sent.peekLast().future();
  }

  /** Sends what is held, waits for every push in flight, then takes the pulled values in. */
  void awaitInFlight() {
    flush();
    while (!sent.isEmpty()) {
      awaitOldest();
      takeAnswered();
    }
  }

  /** Waits for the oldest push in flight to be answered (and, streamed, taken in). */
  private void awaitOldest() {
    Sent s = sent.peekFirst();
    if (s.streamed() != null) {
      client.streams().await(s.streamed());
    } else {
      stop.await(s.future(), "waiting for a push");
    }
  }

  private boolean answered(Sent s) {
    return s.streamed() != null ? s.streamed().isComplete() : s.future().isDone();
  }

  /**
   * Starts a push of the gradients held, recording the values it leaves from: {@code rowsCopied},
   * when not null, is the base to use, whose sparse rows the local step of the one gradient held
   * copied already.
   */
  private void startHeld(Parameters rowsCopied) {
    while (sent.size() >= MAX_IN_FLIGHT) {
      awaitOldest();
      takeAnswered();
    }
    if (comm == null && !streamed) {
      comm =
          Executors.newSingleThreadExecutor(
              r -> {
                Thread t = new Thread(r, "push-pull");
                t.setDaemon(true);
                return t;
              });
    }
    Parameters out = held;
    int batches = heldCount;
    held = null;
    heldCount = 0;
    Parameters base = rowsCopied != null ? rowsCopied : freeBase();
    Gradients.copyDense(values, base);
    PushRows rows = heldRows;
    heldRows = null;
    if (rows != null && rowsCopied == null) {
      rows.copyBase();
    }
    Parameters latest = latestForPush(rows == null);
    Parameters pulled = freePulled.isEmpty() ? Parameters.zerosLike(model) : freePulled.pop();
    if (streamed) {
      int tag = 0;
      if (tagged && rows != null) {
        if (pushesUnderTag == PUSHES_PER_WRITER_TAG) {
          nextWriterTag();
        }
        pushesUnderTag++;
        tag = cache.writerTag();
      }
      StreamedPush push =
          rows == null
              ? client.startPush(out, null, () -> latest, pulled, false)
              : client.startPush(
                  out, rows.flat(), () -> rows.putBefore(latest), pulled, cache != null, tag);
      sent.addLast(
          new Sent(
              client.streams().acknowledgement(push), push, out, pulled, base, rows, batches, tag));
      return;
    }
    sent.addLast(
        new Sent(
            comm.submit(() -> client.pushAndPull(out, latest, pulled)),
            null,
            out,
            pulled,
            base,
            null,
            batches,
            0));
  }

  /**
   * The values a push about to start re-initialises a pserver with, if it finds one without state:
   * one consistent set, assembled without copying. Dense: what the push before it pulled, complete
   * by the time this push runs (the pushes run in order on one thread) or, streamed, complete for
   * every pserver that fails this push (its answers to the push before arrived first, on the same
   * stream, and were taken in before its failure is acted on; a pserver is re-initialised from its
   * own blocks only), and written by nobody until this push was taken in: {@link #takeAnswered}
   * frees a pulled buffer only once the next push was taken. Sparse: the tables of the batch just
   * trained, which the training thread replaces for the next batch and never changes again (see
   * {@code TaskTrainer}); with the row cache ({@code withSparse} false), added only if a pserver
   * needs them, from the push's copies of its rows as they were before their local steps ({@link
   * PushRows#putBefore}): the pservers' values and the earlier pushes' steps.
   */
  private Parameters latestForPush(boolean withSparse) {
    Parameters dense = sent.isEmpty() ? lastTaken : sent.peekLast().pulled();
    Parameters latest = new Parameters();
    for (String name : dense.denseNames()) {
      latest.putDense(name, dense.dense(name));
    }
    if (withSparse) {
      for (String t : values.sparseNames()) {
        latest.putSparse(t, values.sparse(t));
      }
    }
    return latest;
  }

  /**
   * Takes in the values of the pushes answered, oldest first: each rebases the training thread's
   * values on what it pulled, keeping the local steps taken since it left. Frees their buffers. A
   * push that failed (the trainer stops) fails here.
   */
  private void takeAnswered() {
    if (streamed) {
      client.streams().poll();
    }
    while (!sent.isEmpty() && answered(sent.peekFirst())) {
      Sent s = sent.pollFirst();
      if (s.streamed() == null) {
        stop.await(s.future(), "waiting for a push");
      }
      Gradients.rebaseDense(values, s.pulled(), s.base());
      if (s.rows() != null) {
        cache.rebase(s.streamed().rows(), s.rows());
        // answered: no unanswered push carries its rows any more
        if (s.writerTag() == 0) {
          s.rows().release();
        } else if (s.streamed().changedOnly() && s.writerTag() == cache.writerTag()) {
          // every push before it under this tag was answered in full or confirmed: the rows its
          // answer left out are unchanged by anybody else since
          cache.confirm(s.rows());
        } else {
          if (!s.streamed().changedOnly()) {
            nextWriterTag();
          }
          s.rows().release();
        }
        freeRows.push(s.rows());
      }
      freeBases.push(s.base());
      s.grads().clear();
      freeGrads.push(s.grads());
      // the push after s may still re-initialise from the buffer s pulled: free the one before
      if (lastTaken != null) {
        freePulled.push(lastTaken);
      }
      lastTaken = s.pulled();
    }
  }

  private Parameters freeBase() {
    return freeBases.isEmpty() ? Parameters.zerosLike(model) : freeBases.pop();
  }

  private Parameters freeGrads() {
    return freeGrads.isEmpty() ? Parameters.zerosLike(model) : freeGrads.pop();
  }

  /**
   * Ends the pipeline once the pushes in flight were answered (at most {@link #CLOSE_WAIT}): giving
   * up one that a pserver already applied would count it as dropped although it took effect. A push
   * still retrying by then (its pserver is down, or the trainer stops) is given up: its stream is
   * cancelled, or the background thread interrupted.
   */
  @Override
  public void close() {
    if (streamed) {
      client.streams().close(CLOSE_WAIT);
    }
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
