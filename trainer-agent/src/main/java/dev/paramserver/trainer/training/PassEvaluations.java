package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.stop.StopSignal;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The evaluations of one training session. A pass that ends is evaluated on a background thread,
 * with values of its own pulled from the pservers when the evaluation starts, while the training
 * thread goes on with the next pass: the training thread never waits for an evaluation, and only
 * the trainer elected for the pass ({@link Evaluator#elected}) evaluates it. If passes end faster
 * than they are evaluated, one pass at most waits: a newer pass end replaces it (logged). The job's
 * last pass is evaluated on the training thread once training is over, after the background
 * evaluations ended, with the training thread's values.
 */
final class PassEvaluations implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PassEvaluations.class);

  /** The longest {@link #close} waits for an evaluation to notice that it is interrupted. */
  private static final long CLOSE_WAIT_MS = 5_000;

  private final Evaluator evaluator;
  private final TrainingContext ctx;
  private final StopSignal stop;
  private final ThreadPoolExecutor background;
  // the background evaluations' values: a copy of the training thread's at the start (what a
  // pserver that lost its state is re-initialised with, if a pull finds one), then pulled
  private final Parameters values;

  PassEvaluations(Evaluator evaluator, TrainingContext ctx, StopSignal stop) {
    this.evaluator = evaluator;
    this.ctx = ctx;
    this.stop = stop;
    this.values = Parameters.zerosLike(ctx.model());
    Gradients.copyDense(ctx.values(), values);
    this.background =
        new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(1),
            r -> {
              Thread t = new Thread(r, "evaluator");
              t.setDaemon(true);
              return t;
            },
            (r, pool) -> {
              // the queue holds the one pass waiting: the newer pass end replaces it
              Runnable dropped = pool.getQueue().poll();
              if (dropped != null) {
                log.info("an evaluation was still running: skipping the older pass waiting for it");
              }
              if (!pool.isShutdown()) {
                pool.execute(r);
              }
            });
  }

  /** Pass {@code pass} ended: evaluates it in the background if this trainer is elected. */
  void passEnded(int pass) {
    if (ctx.testSet().size() == 0) {
      return;
    }
    background.execute(() -> evaluateInBackground(pass));
  }

  private void evaluateInBackground(int pass) {
    try {
      if (evaluator.elected(ctx, pass)) {
        evaluator.evaluate(ctx, values, pass);
      }
    } catch (StoppedException e) {
      log.info("evaluation of pass {} stopped", pass);
    } catch (RuntimeException e) {
      // an evaluation lost costs a pass's figures, not the training
      log.error("evaluation of pass {} failed: {}", pass, e.toString(), e);
    }
  }

  /**
   * The job is finished: waits for the background evaluation (if one runs), then evaluates {@code
   * lastPass} with the training thread's values if this trainer is elected for it.
   */
  void jobFinished(int lastPass) {
    background.shutdown();
    try {
      while (!background.awaitTermination(100, TimeUnit.MILLISECONDS)) {
        stop.check("waiting for the evaluation of an earlier pass");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException("waiting for the evaluation of an earlier pass");
    }
    if (ctx.testSet().size() > 0 && evaluator.elected(ctx, lastPass)) {
      evaluator.evaluate(ctx, ctx.values(), lastPass);
    }
  }

  @Override
  public void close() {
    background.shutdownNow();
    try {
      if (!background.awaitTermination(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS)) {
        log.warn("the background evaluation did not end within {} ms", CLOSE_WAIT_MS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
