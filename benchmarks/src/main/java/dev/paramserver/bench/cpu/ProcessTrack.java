package dev.paramserver.bench.cpu;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The CPU counters of one process over time, read from {@code /proc}: the process's user + system
 * time ({@code /proc/<pid>/stat}, threads that ended included), the bytes it read and wrote through
 * system calls ({@code /proc/<pid>/io}: sockets and files) and, per {@link ThreadKind}, its
 * threads' time on a CPU, time runnable but waiting for one, and slices ({@code
 * task/<tid>/schedstat}).
 *
 * <p>Each sample adds what every thread ran since the previous one (a thread that ended between two
 * samples loses its last piece), so the per-kind counters only grow; {@link #at} reads them at any
 * instant by linear interpolation between the samples around it.
 */
final class ProcessTrack {
  /** Clock ticks per second of {@code utime} and {@code stime} (USER_HZ, 100 on Linux). */
  static final long TICKS_PER_SECOND = 100;

  /** Index of the process's CPU nanoseconds (from ticks) in a sample's values. */
  static final int CPU_NS = 0;

  static final int READ_BYTES = 1;
  static final int WRITTEN_BYTES = 2;
  private static final int KINDS_AT = 3;
  static final int WIDTH = KINDS_AT + 3 * ThreadKind.values().length;

  /** Index of {@code kind}'s on-CPU nanoseconds in a sample's values. */
  static int runNs(ThreadKind kind) {
    return KINDS_AT + 3 * kind.ordinal();
  }

  /** Index of {@code kind}'s run-queue wait nanoseconds in a sample's values. */
  static int waitNs(ThreadKind kind) {
    return KINDS_AT + 3 * kind.ordinal() + 1;
  }

  /** Index of {@code kind}'s slices (times on a CPU) in a sample's values. */
  static int slices(ThreadKind kind) {
    return KINDS_AT + 3 * kind.ordinal() + 2;
  }

  record Sample(long nanos, double[] values) {}

  final String role;
  final long pid;
  private final String trainThread;
  private final Path proc;
  private final Map<Long, long[]> lastByTid = new HashMap<>();
  private final double[] kinds = new double[WIDTH];
  private final List<Sample> samples = new ArrayList<>();
  private volatile boolean gone;

  ProcessTrack(Path procRoot, String role, long pid, String trainThread) {
    this.role = role;
    this.pid = pid;
    this.trainThread = trainThread;
    this.proc = procRoot.resolve(Long.toString(pid));
  }

  boolean gone() {
    return gone;
  }

  /** Reads the counters now; a process that ended keeps its last sample. */
  void sample(long nanos) {
    if (gone) {
      return;
    }
    try {
      double[] v = read();
      synchronized (samples) {
        samples.add(new Sample(nanos, v));
      }
    } catch (NoSuchFileException e) {
      gone = true;
    } catch (IOException | RuntimeException e) {
      // a process ending while it is read: its next sample says whether it is gone
      if (!Files.isDirectory(proc)) {
        gone = true;
      }
    }
  }

  private double[] read() throws IOException {
    double[] v = kinds.clone();
    String[] stat = afterName(Files.readString(proc.resolve("stat")));
    // fields 14 and 15 (utime, stime): the 12th and 13th after the name
    v[CPU_NS] =
        (Long.parseLong(stat[11]) + Long.parseLong(stat[12])) * (1_000_000_000L / TICKS_PER_SECOND);
    for (String line : Files.readAllLines(proc.resolve("io"))) {
      if (line.startsWith("rchar:")) {
        v[READ_BYTES] = Long.parseLong(line.substring(6).trim());
      } else if (line.startsWith("wchar:")) {
        v[WRITTEN_BYTES] = Long.parseLong(line.substring(6).trim());
      }
    }
    Set<Long> seen = new HashSet<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(proc.resolve("task"))) {
      for (Path task : tasks) {
        long tid = Long.parseLong(task.getFileName().toString());
        long[] now;
        String comm;
        try {
          String[] s = Files.readString(task.resolve("schedstat")).trim().split("\\s+");
          now = new long[] {Long.parseLong(s[0]), Long.parseLong(s[1]), Long.parseLong(s[2])};
          comm = Files.readString(task.resolve("comm")).trim();
        } catch (NoSuchFileException e) {
          continue; // the thread ended
        }
        seen.add(tid);
        long[] before = lastByTid.put(tid, now);
        ThreadKind kind = ThreadKind.of(comm, trainThread);
        for (int i = 0; i < 3; i++) {
          long d = now[i] - (before == null ? 0 : before[i]);
          kinds[KINDS_AT + 3 * kind.ordinal() + i] += Math.max(0, d);
        }
      }
    }
    lastByTid.keySet().retainAll(seen);
    for (int i = KINDS_AT; i < WIDTH; i++) {
      v[i] = kinds[i];
    }
    return v;
  }

  /** The fields of a {@code stat} line after the thread's name (which may hold spaces). */
  static String[] afterName(String stat) {
    int close = stat.lastIndexOf(')');
    if (close < 0) {
      throw new IllegalArgumentException("not a /proc stat line: " + stat);
    }
    return stat.substring(close + 1).trim().split("\\s+");
  }

  /**
   * The counters at {@code nanos}, interpolated between the samples around it (the first or last
   * sample outside them); null before any sample.
   */
  double[] at(long nanos) {
    synchronized (samples) {
      return interpolate(samples, nanos);
    }
  }

  static double[] interpolate(List<Sample> samples, long nanos) {
    if (samples.isEmpty()) {
      return null;
    }
    Sample prev = samples.get(0);
    if (nanos <= prev.nanos()) {
      return prev.values().clone();
    }
    for (Sample s : samples) {
      if (s.nanos() >= nanos) {
        double f = (nanos - prev.nanos()) / (double) Math.max(1, s.nanos() - prev.nanos());
        double[] out = new double[prev.values().length];
        for (int i = 0; i < out.length; i++) {
          out[i] = prev.values()[i] + f * (s.values()[i] - prev.values()[i]);
        }
        return out;
      }
      prev = s;
    }
    return prev.values().clone();
  }
}
