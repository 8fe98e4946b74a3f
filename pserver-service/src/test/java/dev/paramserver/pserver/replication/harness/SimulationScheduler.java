package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.ReplicationClock;
import io.grpc.Deadline;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A seeded scheduler with a simulated clock, as FoundationDB's simulator and TigerBeetle's VOPR run
 * their code: the real protocol code runs on real threads, but one at a time, each until it parks
 * in a {@link ReplicationClock} wait or its task ends, and the next one to run is drawn from the
 * seed. Time moves only when nothing can run: to the next timer or wait deadline. Threads belong to
 * a node (a pserver, etcd, a trainer): a paused node's threads do not run, a crashed node's never
 * again. The same seed gives the same order of every step, so a run replays bit for bit.
 *
 * <p>A wait may be resumed while its condition does not hold (a spurious wake-up, which every wait
 * loop of the replication tolerates): after any step that was not such a futile wake-up, every
 * parked thread may be resumed again.
 */
final class SimulationScheduler implements AutoCloseable {
  /** Thrown in a parked thread of a crashed node when the simulation ends: unwinds it. */
  static final class Aborted extends Error {
    private static final long serialVersionUID = 1L;

    Aborted() {
      super("simulation ended", null, false, false);
    }
  }

  private final Random random;
  private final Semaphore back = new Semaphore(0);
  private final List<Runnable> ready = new ArrayList<>();
  private final List<String> readyNodes = new ArrayList<>();
  private final PriorityQueue<Timer> timers = new PriorityQueue<>();
  private final List<Parked> parked = new ArrayList<>();
  private final List<Worker> idle = new ArrayList<>();
  private final Set<String> paused = new HashSet<>();
  private final Set<String> crashed = new HashSet<>();
  private final List<Throwable> uncaught = new ArrayList<>();
  // gRPC deadlines on the simulated clock (ReplicationClock#deadlineAfter)
  private final Deadline.Ticker ticker =
      new Deadline.Ticker() {
        @Override
        public long nanoTime() {
          return now();
        }
      };
  private final ThreadLocal<Worker> current = new ThreadLocal<>();
  private long now = TimeUnit.SECONDS.toNanos(1);
  private long sequence;
  private long steps;
  private final SimulationTrace trace = new SimulationTrace();
  private boolean closing;
  // what the step that just ran did: re-parked on the monitor it was resumed from
  private Object resumedFrom;
  private boolean futile;

  SimulationScheduler(long seed) {
    this.random = new Random(seed);
  }

  /** Simulated nanoseconds. */
  long now() {
    return now;
  }

  /** Steps run so far. */
  long steps() {
    return steps;
  }

  /** A hash of every step's choice and time so far: equal for two runs of one seed. */
  long traceHash() {
    return trace.hash();
  }

  /** Mixes {@code value} into the trace hash (the simulation adds what it observed). */
  void record(long value) {
    record(value, "value");
  }

  /** As {@link #record(long)}; a kept trace also says what {@code value} is. */
  synchronized void record(long value, String what) {
    trace.record(value, what, steps, now);
  }

  /**
   * From now on, keeps every step and recorded value in words ({@link #traceLines}): what tells two
   * runs of a seed apart when their hashes differ. Costs memory: a test of replays asks.
   */
  void keepTrace() {
    trace.keep();
  }

  /** The kept trace (empty unless {@link #keepTrace} was called). */
  List<String> traceLines() {
    return trace.lines();
  }

  /** Runs {@code task} on a thread of {@code node} once the scheduler picks it. */
  synchronized void submit(String node, Runnable task) {
    if (closing || crashed.contains(node)) {
      return;
    }
    ready.add(task);
    readyNodes.add(node);
  }

  /** Runs {@code task} on a thread of {@code node} once {@code nanos} of simulated time passed. */
  synchronized Timer schedule(String node, long nanos, Runnable task) {
    record(
        Math.max(0, nanos),
        trace.kept() ? node + " sets a timer for " + SimulationTrace.describe(task) + " in" : "");
    Timer t = new Timer(now + Math.max(0, nanos), sequence++, node, task);
    timers.add(t);
    return t;
  }

  /** The node's threads stop running (SIGSTOP) until {@link #resume}. */
  synchronized void pause(String node) {
    paused.add(node);
  }

  synchronized void resume(String node) {
    paused.remove(node);
  }

  /** The node's threads never run again; its timers and tasks are dropped. */
  synchronized void crash(String node) {
    crashed.add(node);
  }

  /**
   * The clock of {@code node}'s code: simulated time, waits that park, this scheduler's threads.
   */
  ReplicationClock clock(String node) {
    return new SimulatedClock(this, node);
  }

  /** Whether the running thread is one of this scheduler's. */
  boolean onSimulationThread() {
    return current.get() != null;
  }

  /** The node of the running thread (null outside the simulation's threads). */
  String node() {
    Worker w = current.get();
    return w == null ? null : w.node;
  }

  /**
   * Runs steps until {@code done} holds, nothing can run any more, or the simulated time passes
   * {@code until}.
   *
   * @return whether {@code done} holds
   */
  boolean runUntil(BooleanSupplier done, long until) {
    while (!done.getAsBoolean()) {
      if (now > until || !step()) {
        return done.getAsBoolean();
      }
    }
    return true;
  }

  /** Runs one step (or moves the clock); false when nothing is left to run or wait for. */
  boolean step() {
    Runnable task = null;
    Parked wake = null;
    String node;
    synchronized (this) {
      int runnable = 0;
      for (int i = 0; i < ready.size(); i++) {
        runnable += runs(readyNodes.get(i)) ? 1 : 0;
      }
      int wakeable = 0;
      for (Parked p : parked) {
        wakeable += p.dirty && runs(p.worker.node) ? 1 : 0;
      }
      if (runnable + wakeable == 0) {
        return advance();
      }
      int pick = random.nextInt(runnable + wakeable);
      if (pick < runnable) {
        int i = nth(pick);
        task = ready.remove(i);
        node = readyNodes.remove(i);
      } else {
        wake = nthParked(pick - runnable);
        parked.remove(wake);
        node = wake.worker.node;
      }
      record(
          pick,
          !trace.kept()
              ? ""
              : "of "
                  + runnable
                  + " tasks and "
                  + wakeable
                  + " parked threads, "
                  + node
                  + (task != null
                      ? " runs " + SimulationTrace.describe(task)
                      : " resumes in " + wake.where)
                  + ": pick");
      record(node.hashCode(), "node");
      steps++;
    }
    resumedFrom = wake == null ? null : wake.monitor;
    futile = false;
    if (task != null) {
      Worker w;
      synchronized (this) {
        w = idle.isEmpty() ? new Worker(this) : idle.remove(idle.size() - 1);
      }
      w.run(node, task);
    } else {
      wake.worker.resume(wake.monitor);
    }
    awaitBack(node);
    synchronized (this) {
      if (!futile) {
        parked.forEach(p -> p.dirty = true);
      }
    }
    return true;
  }

  private boolean runs(String node) {
    return !paused.contains(node) && !crashed.contains(node);
  }

  private int nth(int n) {
    for (int i = 0, seen = 0; i < ready.size(); i++) {
      if (runs(readyNodes.get(i)) && seen++ == n) {
        return i;
      }
    }
    throw new IllegalStateException("no runnable task " + n);
  }

  private Parked nthParked(int n) {
    int seen = 0;
    for (Parked p : parked) {
      if (p.dirty && runs(p.worker.node) && seen++ == n) {
        return p;
      }
    }
    throw new IllegalStateException("no wakeable thread " + n);
  }

  /** Moves the clock to the next timer or wait deadline; false when there is none. */
  private synchronized boolean advance() {
    long next = timers.isEmpty() ? Long.MAX_VALUE : timers.peek().at;
    for (Parked p : parked) {
      if (runs(p.worker.node)) {
        next = Math.min(next, p.deadline);
      }
    }
    if (next == Long.MAX_VALUE) {
      return false;
    }
    now = Math.max(now, next);
    record(now, "the clock moves to");
    while (!timers.isEmpty() && timers.peek().at <= now) {
      Timer t = timers.poll();
      if (!t.cancelled) {
        submit(t.node, t.task);
      }
    }
    for (Parked p : parked) {
      if (p.deadline <= now) {
        p.dirty = true;
      }
    }
    return true;
  }

  private void awaitBack(String node) {
    try {
      if (!back.tryAcquire(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            "simulation stuck: a thread of " + node + " neither parked nor ended in 20 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** The ticker of gRPC deadlines on this scheduler's simulated time. */
  Deadline.Ticker ticker() {
    return ticker;
  }

  /**
   * Notes that something outside the seed reached the run (the real clock, a thread not the
   * scheduler's): the simulation reports it as a violation.
   */
  void leak(String what) {
    trace.leak(what);
  }

  /** What {@link #leak} noted. */
  List<String> leaks() {
    return trace.leaks();
  }

  synchronized void leakUnlessClosing(String what) {
    if (!closing) {
      leak(what);
    }
  }

  /** Exceptions tasks threw (a real executor logs and drops them). */
  synchronized List<Throwable> uncaught() {
    return List.copyOf(uncaught);
  }

  /** Unwinds every parked thread and ends the workers. */
  @Override
  public void close() {
    List<Parked> left;
    synchronized (this) {
      closing = true;
      ready.clear();
      timers.clear();
      left = new ArrayList<>(parked);
      parked.clear();
    }
    for (Parked p : left) {
      p.worker.aborted = true;
      p.worker.resume(p.monitor);
      awaitBack(p.worker.node);
    }
    synchronized (this) {
      idle.forEach(Worker::end);
      idle.clear();
    }
  }

  /** A timer; cancelling it before it is due drops it. */
  static final class Timer implements Comparable<Timer> {
    final long at;
    final long seq;
    final String node;
    final Runnable task;
    volatile boolean cancelled;

    Timer(long at, long seq, String node, Runnable task) {
      this.at = at;
      this.seq = seq;
      this.node = node;
      this.task = task;
    }

    @Override
    public int compareTo(Timer o) {
      return at != o.at ? Long.compare(at, o.at) : Long.compare(seq, o.seq);
    }
  }

  private static final class Parked {
    final Worker worker;
    final Object monitor;
    final long deadline;
    // where the thread waits (kept traces only)
    final String where;
    boolean dirty;

    Parked(Worker worker, Object monitor, long deadline, String where) {
      this.worker = worker;
      this.monitor = monitor;
      this.deadline = deadline;
      this.where = where;
    }
  }

  /**
   * Called by a simulation thread holding {@code monitor}: parks until the scheduler resumes it.
   */
  void park(Object monitor, long nanos) {
    Worker w = current.get();
    if (w.aborted) {
      throw new Aborted();
    }
    long deadline = nanos >= Long.MAX_VALUE - now ? Long.MAX_VALUE : now + nanos;
    synchronized (this) {
      if (monitor == resumedFrom && w != null) {
        futile = true;
      }
      parked.add(new Parked(w, monitor, deadline, trace.kept() ? SimulationTrace.caller() : ""));
    }
    w.granted = false;
    back.release();
    while (!w.granted) {
      try {
        monitor.wait();
      } catch (InterruptedException e) {
        // only the scheduler resumes a simulation thread
      }
    }
    if (w.aborted) {
      throw new Aborted();
    }
  }

  /** A real thread that runs simulation tasks, one at a time, when the scheduler says. */
  private static final class Worker {
    private final SimulationScheduler sim;
    private final Semaphore go = new Semaphore(0);
    private final Thread thread;
    String node;
    private Runnable task;
    volatile boolean granted;
    volatile boolean aborted;
    private boolean ended;

    Worker(SimulationScheduler sim) {
      this.sim = sim;
      this.thread = new Thread(this::loop, "sim-worker");
      thread.setDaemon(true);
      thread.start();
    }

    void run(String node, Runnable task) {
      this.node = node;
      this.task = task;
      go.release();
    }

    void resume(Object monitor) {
      synchronized (monitor) {
        granted = true;
        monitor.notifyAll();
      }
    }

    void end() {
      ended = true;
      go.release();
    }

    private void loop() {
      sim.current.set(this);
      while (true) {
        go.acquireUninterruptibly();
        if (ended) {
          return;
        }
        try {
          task.run();
        } catch (Aborted e) {
          // a crashed node's thread, unwound at the end
        } catch (Throwable t) {
          synchronized (sim) {
            if (sim.uncaught.size() < 20) {
              sim.uncaught.add(t);
            }
          }
        }
        Thread.interrupted();
        boolean keep;
        synchronized (sim) {
          keep = !aborted && !sim.closing;
          if (keep) {
            sim.idle.add(this);
          }
        }
        sim.back.release();
        if (!keep) {
          return;
        }
      }
    }
  }
}
