package dev.paramserver.bench.cpu;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Samples the CPU counters of a job's processes from {@code /proc} every {@link #EVERY} on a thread
 * of its own ({@link ProcessTrack}: per process and per kind of thread), so that {@link #window}
 * can cut any interval out of them afterwards: the CPU each role spent between two instants of the
 * job. About 1 % of a core for a handful of JVMs. Where {@code /proc} is missing (not Linux) it
 * samples nothing and its windows are empty.
 */
public final class CpuSampler implements AutoCloseable {
  /** Time between two samples. */
  public static final Duration EVERY = Duration.ofMillis(250);

  private final Path procRoot;
  private final List<ProcessTrack> tracks = new CopyOnWriteArrayList<>();
  // the whole machine's busy CPU-ns (/proc/stat), every sample
  private final List<ProcessTrack.Sample> machine = new ArrayList<>();
  private final Thread thread;

  private CpuSampler(Path procRoot) {
    this.procRoot = procRoot;
    this.thread = new Thread(this::loop, "cpu-sampler");
    this.thread.setDaemon(true);
  }

  /** Starts sampling (nothing until {@link #watch} adds a process). */
  public static CpuSampler start() {
    CpuSampler s = new CpuSampler(Path.of("/proc"));
    s.thread.start();
    return s;
  }

  /** Whether this machine has {@code /proc} to sample. */
  public static boolean available() {
    return Files.isReadable(Path.of("/proc/self/task"));
  }

  /**
   * Samples process {@code pid} from now on as one of {@code role}; {@code trainThread} names its
   * training thread (null when it has none), whose run and wait are kept apart.
   */
  public void watch(String role, long pid, String trainThread) {
    if (pid <= 0 || !available()) {
      return;
    }
    ProcessTrack t = new ProcessTrack(procRoot, role, pid, trainThread);
    t.sample(System.nanoTime());
    tracks.add(t);
  }

  /** Takes a sample of every watched process now (besides the periodic ones). */
  public synchronized void sampleNow() {
    long now = System.nanoTime();
    for (ProcessTrack t : tracks) {
      t.sample(now);
    }
    double busy = machineBusyNs(procRoot);
    if (!Double.isNaN(busy)) {
      synchronized (machine) {
        machine.add(new ProcessTrack.Sample(now, new double[] {busy}));
      }
    }
  }

  /**
   * The CPU-ns every CPU of the machine spent busy (all but idle and I/O wait), from the first line
   * of {@code /proc/stat}; NaN when unreadable.
   */
  static double machineBusyNs(Path procRoot) {
    try (var lines = Files.lines(procRoot.resolve("stat"))) {
      String first = lines.findFirst().orElse("");
      String[] f = first.trim().split("\\s+");
      if (f.length < 6 || !f[0].equals("cpu")) {
        return Double.NaN;
      }
      double busy = 0;
      for (int i = 1; i < Math.min(f.length, 9); i++) {
        if (i != 4 && i != 5) { // idle, iowait
          busy += Long.parseLong(f[i]);
        }
      }
      return busy * (1e9 / ProcessTrack.TICKS_PER_SECOND);
    } catch (java.io.IOException | RuntimeException e) {
      return Double.NaN;
    }
  }

  private void loop() {
    while (!Thread.currentThread().isInterrupted()) {
      sampleNow();
      try {
        Thread.sleep(EVERY.toMillis());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /**
   * What each watched process spent between {@code t0Nanos} and {@code t1Nanos} ({@link
   * System#nanoTime}), over which the job trained {@code records} samples.
   */
  public CpuWindow window(long t0Nanos, long t1Nanos, long records) {
    List<CpuWindow.Spent> spent = new ArrayList<>();
    for (ProcessTrack t : tracks) {
      double[] a = t.at(t0Nanos);
      double[] b = t.at(t1Nanos);
      if (a == null || b == null) {
        continue;
      }
      double[] d = new double[a.length];
      for (int i = 0; i < d.length; i++) {
        d[i] = b[i] - a[i];
      }
      spent.add(new CpuWindow.Spent(t.role, t.pid, d));
    }
    double machineBusy = Double.NaN;
    synchronized (machine) {
      double[] a = ProcessTrack.interpolate(machine, t0Nanos);
      double[] b = ProcessTrack.interpolate(machine, t1Nanos);
      if (a != null && b != null) {
        machineBusy = b[0] - a[0];
      }
    }
    return new CpuWindow((t1Nanos - t0Nanos) / 1e9, records, spent, machineBusy);
  }

  @Override
  public void close() {
    thread.interrupt();
    try {
      thread.join(Duration.ofSeconds(5).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
