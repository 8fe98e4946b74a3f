package dev.paramserver.bench.cpu;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The CPU a job's processes spent over a window of its training ({@link CpuSampler#window}), and
 * the figures per role it gives ({@link #figures}).
 *
 * @param seconds the window's wall time
 * @param records the samples trained in it
 * @param spent what each process spent ({@link ProcessTrack}'s counters, end minus start)
 * @param machineBusyNs the CPU-ns the whole machine spent busy in the window (NaN: unknown)
 */
public record CpuWindow(double seconds, long records, List<Spent> spent, double machineBusyNs) {
  /** The role of the benchmark's own JVM (it supervises the job): reported, not in {@code all}. */
  public static final String SUPERVISOR = "supervisor";

  /** One process's counters over the window. */
  public record Spent(String role, long pid, double[] delta) {
    double cpuNs() {
      return delta[ProcessTrack.CPU_NS];
    }

    double run(ThreadKind k) {
      return delta[ProcessTrack.runNs(k)];
    }

    double wait(ThreadKind k) {
      return delta[ProcessTrack.waitNs(k)];
    }

    double slices(ThreadKind k) {
      return delta[ProcessTrack.slices(k)];
    }
  }

  /** An empty window (nothing sampled). */
  public static CpuWindow empty() {
    return new CpuWindow(Double.NaN, 0, List.of(), Double.NaN);
  }

  public boolean isEmpty() {
    return spent.isEmpty() || records <= 0 || !(seconds > 0);
  }

  /**
   * The figures of the window, by name (all CPU from user + system ticks; the shares of thread
   * kinds from the threads' scheduler statistics):
   *
   * <ul>
   *   <li>per role {@code r} ({@code trainer}, {@code pserver}, {@code master}, {@code etcd},
   *       {@code single} for one JVM, {@code supervisor} for the benchmark's JVM) and for {@code
   *       all} (every role but the supervisor): {@code r_cpu_us_per_sample} (CPU-µs per trained
   *       sample), {@code r_cores} (cores busy on average) and {@code r_jit_share} (the JIT's part
   *       of its CPU); {@code r_gc_share} and {@code r_loop_share} (gRPC event loops) for the JVM
   *       roles;
   *   <li>{@code all_cpu_us_per_sample_no_jit}: the same without the JIT's CPU;
   *   <li>of the training threads (the trainers', or the one JVM's {@code main}), averaged over the
   *       processes: {@code train_thread_run_share} (share of the window on a CPU), {@code
   *       train_thread_wait_share} (runnable, waiting for a CPU: the run queue), {@code
   *       train_thread_blocked_share} (neither: waiting for answers, pulls or tasks), {@code
   *       train_thread_cpu_us_per_sample} (all training threads' CPU per sample) and {@code
   *       train_thread_us_per_slice};
   *   <li>{@code pserver_read_bytes_per_sample} and {@code pserver_written_bytes_per_sample}: bytes
   *       the pservers read and wrote through system calls per sample (their sockets, and the
   *       write-ahead log when it is on); {@code pserver_cpu_skew}: the busiest pserver's CPU over
   *       the mean;
   *   <li>{@code machine_cores_busy}: cores the whole machine kept busy ({@code /proc/stat}), and
   *       {@code other_cores_busy}: those of processes outside the job and the supervisor (other
   *       users of a shared machine).
   * </ul>
   *
   * Empty when nothing was sampled.
   */
  public Map<String, Double> figures() {
    Map<String, Double> f = new LinkedHashMap<>();
    if (isEmpty()) {
      return f;
    }
    Set<String> roles = new TreeSet<>();
    spent.forEach(s -> roles.add(s.role()));
    List<Spent> all = new ArrayList<>();
    for (String role : roles) {
      List<Spent> of = spent.stream().filter(s -> s.role().equals(role)).toList();
      if (!role.equals(SUPERVISOR)) {
        all.addAll(of);
      }
      put(f, role, of);
    }
    put(f, "all", all);
    double jit = all.stream().mapToDouble(s -> s.run(ThreadKind.JIT)).sum();
    f.put("all_cpu_us_per_sample_no_jit", (cpuNs(all) - jit) / 1000.0 / records);
    List<Spent> training =
        all.stream().filter(s -> s.run(ThreadKind.TRAIN) + s.wait(ThreadKind.TRAIN) > 0).toList();
    if (!training.isEmpty()) {
      double window = seconds * 1e9 * training.size();
      double run = training.stream().mapToDouble(s -> s.run(ThreadKind.TRAIN)).sum();
      double wait = training.stream().mapToDouble(s -> s.wait(ThreadKind.TRAIN)).sum();
      double slices = training.stream().mapToDouble(s -> s.slices(ThreadKind.TRAIN)).sum();
      f.put("train_thread_run_share", run / window);
      f.put("train_thread_wait_share", wait / window);
      f.put("train_thread_blocked_share", Math.max(0, 1 - (run + wait) / window));
      f.put("train_thread_cpu_us_per_sample", run / 1000.0 / records);
      f.put("train_thread_us_per_slice", slices > 0 ? run / 1000.0 / slices : Double.NaN);
    }
    List<Spent> pservers = spent.stream().filter(s -> s.role().equals("pserver")).toList();
    if (!pservers.isEmpty()) {
      double read = pservers.stream().mapToDouble(s -> s.delta()[ProcessTrack.READ_BYTES]).sum();
      double written =
          pservers.stream().mapToDouble(s -> s.delta()[ProcessTrack.WRITTEN_BYTES]).sum();
      f.put("pserver_read_bytes_per_sample", read / records);
      f.put("pserver_written_bytes_per_sample", written / records);
      double max = pservers.stream().mapToDouble(Spent::cpuNs).max().orElse(0);
      double mean = cpuNs(pservers) / pservers.size();
      f.put("pserver_cpu_skew", mean > 0 ? max / mean : Double.NaN);
    }
    if (!Double.isNaN(machineBusyNs)) {
      double machine = machineBusyNs / 1e9 / seconds;
      double ours = cpuNs(spent) / 1e9 / seconds;
      f.put("machine_cores_busy", machine);
      f.put("other_cores_busy", Math.max(0, machine - ours));
    }
    return f;
  }

  private void put(Map<String, Double> f, String role, List<Spent> of) {
    double cpu = cpuNs(of);
    f.put(role + "_cpu_us_per_sample", cpu / 1000.0 / records);
    f.put(role + "_cores", cpu / 1e9 / seconds);
    f.put(role + "_jit_share", share(of, ThreadKind.JIT, cpu));
    if (!role.equals("etcd")) {
      f.put(role + "_gc_share", share(of, ThreadKind.GC, cpu));
      f.put(role + "_loop_share", share(of, ThreadKind.LOOP, cpu));
    }
  }

  private static double share(List<Spent> of, ThreadKind kind, double cpuNs) {
    double k = of.stream().mapToDouble(s -> s.run(kind)).sum();
    return cpuNs > 0 ? Math.min(1, k / cpuNs) : Double.NaN;
  }

  private static double cpuNs(List<Spent> of) {
    return of.stream().mapToDouble(Spent::cpuNs).sum();
  }
}
