package dev.paramserver.trainer.training;

import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.stop.StopSignal;
import java.io.IOException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * The trainer's session, on a thread of its own: set up (build the model, join the job, wait for
 * and initialise the pservers), run the passes, leave the job, exit. Starts once the web server
 * listens and stops first on shutdown (highest phase), so the current batch finishes and the task
 * goes back to the master before the HTTP server and the coordination (etcd or the master) closes.
 * Its state lives in {@link TrainingProgress}.
 */
@Component
public class TrainingSession implements SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(TrainingSession.class);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

  private final TrainingSetup setup;
  private final PassRunner passes;
  private final TrainingProgress progress;
  private final StopSignal stop;
  private final TrainerExit exit;
  private volatile Thread thread;

  public TrainingSession(
      TrainingSetup setup,
      PassRunner passes,
      TrainingProgress progress,
      StopSignal stop,
      TrainerExit exit) {
    this.setup = setup;
    this.passes = passes;
    this.progress = progress;
    this.stop = stop;
    this.exit = exit;
  }

  @Override
  public synchronized void start() {
    if (thread != null) {
      return;
    }
    thread = new Thread(this::runAndExit, "trainer-loop");
    thread.start();
  }

  /** Asks the session to stop after the current batch and waits up to 30 s. */
  @Override
  public void stop() {
    stop.request();
    progress.moveTo(TrainerState.STOPPING);
    Thread t = thread;
    if (t == null) {
      return;
    }
    try {
      t.join(STOP_TIMEOUT.toMillis());
      if (t.isAlive()) {
        log.warn("training session did not stop within {}; interrupting it", STOP_TIMEOUT);
        t.interrupt();
        t.join(2000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public boolean isRunning() {
    Thread t = thread;
    return t != null && t.isAlive();
  }

  /** Stops before the web server (graceful shutdown) and before the coordinator closes. */
  @Override
  public int getPhase() {
    return Integer.MAX_VALUE;
  }

  private void runAndExit() {
    int code;
    // the master takes the dataset while this trainer joins and initialises its pservers
    try (DatasetAnnouncement dataset = passes.announceDataset();
        Session session = new Session(setup.prepare())) {
      session.context.membership().onLost(this::membershipLost);
      code = passes.run(session.context, dataset);
    } catch (StoppedException e) {
      log.info("training session stopped: {}", e.getMessage());
      progress.moveTo(TrainerState.STOPPING);
      progress.moveTo(TrainerState.STOPPED);
      return;
    } catch (RuntimeException | IOException e) {
      // local-cluster reads the reason from this line to stop restarting a trainer that fails the
      // same way every time (its ExitReason): keep "training failed: " and the message on one line
      log.error("training failed: {}", oneLine(e), e);
      progress.fail(e.getMessage());
      code = 1;
    }
    if (!stop.isRequested()) {
      exit.exit(code);
    }
  }

  /**
   * The membership ended for good (its etcd lease was lost and no new one could be taken): nothing
   * more may be done in the job's name, so the session stops and the process exits with code 1.
   */
  private void membershipLost() {
    String why =
        "this trainer is no member of the job any more: its lease was lost and could not be"
            + " renewed (see the lines above); start it again to rejoin";
    log.error("training failed: {}", why);
    progress.fail(why);
    stop.request();
    exit.exit(1);
  }

  /** Closes the membership of a prepared context (leaving the job) when the session ends. */
  private record Session(TrainingContext context) implements AutoCloseable {
    @Override
    public void close() {
      context.membership().close();
    }
  }

  private static String oneLine(Exception e) {
    String message = e.getMessage() == null ? e.getClass().getName() : e.getMessage();
    return message.replace('\n', ' ').replace('\r', ' ');
  }
}
