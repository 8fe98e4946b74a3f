package dev.paramserver.pserver.k8s;

import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;

/**
 * What the pserver container's preStop hook does. When the StatefulSet's {@code spec.replicas} is
 * at or below this pod's ordinal K, the pod is being removed by a scale-down: the hook asks the
 * leader master to scale the job to {@code replicas} pservers (only if the job asks for more, so it
 * never raises the count), then waits until the placement gives this pserver nothing ({@code
 * pservers} of {@code GET /admin/job/scaling} at or below K) and the master's shutdown arrives, at
 * most {@code pre-stop-timeout}. When {@code replicas} is above K the pod is only restarting
 * (rolling update, eviction, node drain): nothing is done. {@code replicas} 0 (the whole job is
 * being stopped, as the chart's job end does) does nothing either: the master refuses a job of no
 * pservers.
 *
 * <p>Concurrent calls share one run.
 */
public final class PreStopHook {
  private static final Logger log = LoggerFactory.getLogger(PreStopHook.class);

  /** What the hook did: {@code action} is none, emptied, shutdown, timeout or error. */
  public record Outcome(String action, String message) {}

  /** Reads the StatefulSet's {@code spec.replicas}. */
  @FunctionalInterface
  public interface Replicas {
    int get() throws InterruptedException;
  }

  private final Replicas replicas;
  private final JobScaler master;
  private final int index;
  private final Duration timeout;
  private final Duration shutdownWait;
  private final Duration poll;
  private final CountDownLatch shutdown = new CountDownLatch(1);
  private final AtomicReference<CompletableFuture<Outcome>> running = new AtomicReference<>();

  /**
   * @param index this pod's ordinal ({@code paramserver.pserver.index}; -1: nothing is done)
   * @param timeout the longest a call waits for this pserver to be emptied
   * @param shutdownWait once emptied, how long to wait for the master's shutdown
   * @param poll time between two looks at the master's scaling state
   */
  public PreStopHook(
      Replicas replicas,
      JobScaler master,
      int index,
      Duration timeout,
      Duration shutdownWait,
      Duration poll) {
    this.replicas = replicas;
    this.master = master;
    this.index = index;
    this.timeout = timeout;
    this.shutdownWait = shutdownWait;
    this.poll = poll;
  }

  /** The application is shutting down (the master's shutdown, or SIGTERM): waits end. */
  public void shutdownStarted() {
    shutdown.countDown();
  }

  /** Runs the hook (or joins the run under way) and says what it did. */
  public Outcome preStop() throws InterruptedException {
    CompletableFuture<Outcome> mine = new CompletableFuture<>();
    CompletableFuture<Outcome> current = running.compareAndExchange(null, mine);
    if (current != null) {
      try {
        return current.get();
      } catch (ExecutionException e) {
        return new Outcome("error", String.valueOf(e.getCause()));
      }
    }
    try {
      Outcome o = decide();
      if (o.action().equals("error") || o.action().equals("timeout")) {
        log.warn("preStop: {}: {}", o.action(), o.message());
      } else {
        log.info("preStop: {}: {}", o.action(), o.message());
      }
      mine.complete(o);
      return o;
    } catch (RuntimeException | InterruptedException e) {
      mine.completeExceptionally(e);
      throw e;
    } finally {
      running.set(null);
    }
  }

  private Outcome decide() throws InterruptedException {
    if (index < 0) {
      return new Outcome("none", "paramserver.pserver.index is not set: no ordinal to compare");
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    int n;
    try {
      n = readReplicas(deadline);
    } catch (RuntimeException e) {
      return new Outcome(
          "error",
          "cannot read the StatefulSet's replicas, the job is not scaled: " + e.getMessage());
    }
    if (n > index) {
      return new Outcome(
          "none",
          "the StatefulSet keeps "
              + n
              + " replicas and this is pod "
              + index
              + ": a restart, not a scale-down");
    }
    if (n == 0) {
      return new Outcome(
          "none", "the StatefulSet is scaled to 0: the whole job stops, nothing is moved");
    }
    log.info(
        "preStop: the StatefulSet asks for {} replicas and this is pod {}: scaling the job to {}"
            + " pservers and waiting until pserver {} owns nothing (at most {})",
        n,
        index,
        n,
        index,
        timeout);
    String failure = askScale(n, deadline);
    if (failure != null) {
      return new Outcome("error", failure);
    }
    return awaitEmptied(deadline);
  }

  private int readReplicas(long deadline) throws InterruptedException {
    RuntimeException last = null;
    for (int attempt = 0; attempt < 3 && System.nanoTime() < deadline; attempt++) {
      try {
        return replicas.get();
      } catch (RuntimeException e) {
        last = e;
        log.warn("preStop: {}", e.getMessage());
        if (shutdown.await(poll.toMillis(), TimeUnit.MILLISECONDS)) {
          break;
        }
      }
    }
    throw last != null ? last : new IllegalStateException("no time left to read the replicas");
  }

  /** Asks for {@code n} pservers until the master takes it: null, or why it gave up. */
  private String askScale(int n, long deadline) throws InterruptedException {
    String last = null;
    while (true) {
      try {
        JsonNode s = master.scaling();
        if (s.path("desired").isNumber() && s.path("desired").asInt() <= n) {
          return null; // asked already (by another pod leaving, or psctl scale): never raise it
        }
        master.scale(n);
        return null;
      } catch (IOException e) {
        if (permanent(e)) {
          return "the master refused to scale the job to " + n + " pservers: " + e.getMessage();
        }
        if (!Objects.equals(last, e.getMessage())) {
          log.warn(
              "preStop: scaling the job to {} pservers failed, retrying: {}", n, e.getMessage());
          last = e.getMessage();
        }
      }
      if (System.nanoTime() > deadline) {
        return "the master did not take the scale to " + n + " pservers in time: " + last;
      }
      if (shutdown.await(poll.toMillis(), TimeUnit.MILLISECONDS)) {
        return "the application shut down before the scale was taken";
      }
    }
  }

  /**
   * A refusal asking again does not change: a bad count, or a job that cannot be scaled (replicas
   * or a synchronous mode).
   */
  private static boolean permanent(IOException e) {
    String m = String.valueOf(e.getMessage());
    return m.contains("answered 400")
        || m.contains("not supported")
        || m.contains("only asynchronous");
  }

  private Outcome awaitEmptied(long deadline) throws InterruptedException {
    String last = null;
    while (System.nanoTime() < deadline) {
      if (shutdown.getCount() == 0) {
        return new Outcome("shutdown", "the master emptied this pserver and shut it down");
      }
      try {
        JsonNode s = master.scaling();
        JsonNode p = s.path("pservers").isNumber() ? s.path("pservers") : s.path("desired");
        if (p.isNumber() && p.asInt() <= index) {
          long left = Math.max(0, deadline - System.nanoTime());
          boolean down =
              shutdown.await(Math.min(shutdownWait.toNanos(), left), TimeUnit.NANOSECONDS);
          return down
              ? new Outcome("shutdown", "the master emptied this pserver and shut it down")
              : new Outcome(
                  "emptied",
                  "pserver "
                      + index
                      + " owns nothing (the job has "
                      + p.asInt()
                      + " pservers); no shutdown came within "
                      + shutdownWait);
        }
      } catch (IOException e) {
        if (!Objects.equals(last, e.getMessage())) {
          log.warn("preStop: cannot read the job's scaling, retrying: {}", e.getMessage());
          last = e.getMessage();
        }
      }
      shutdown.await(poll.toMillis(), TimeUnit.MILLISECONDS);
    }
    return new Outcome(
        "timeout",
        "pserver "
            + index
            + " still owned slots or blocks after "
            + timeout
            + ": the pod stops anyway (the master rolls back a move it cannot finish)");
  }
}
