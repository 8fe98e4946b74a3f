package dev.paramserver.bench.cpu;

import java.util.Map;

/**
 * What a job's measured costs predict for N trainers and M pservers
 * (docs/explanation/performance.md, "The capacity model"):
 *
 * <pre>
 * rate = η · min(N·cores/c_t, M·cores/(c_p·skew), min(N, M)·B/bytes, N/c_thread,
 *                N·lag·batch/RTT, 1/c_master)
 * </pre>
 *
 * with every c in CPU-seconds per sample: {@code cTrainer} and {@code cPserver} all trainers' and
 * all pservers' CPU per sample without the JIT, {@code cThread} the training threads' (one thread
 * runs on at most one core), {@code cMaster} the master's; {@code bytes} per sample on the busier
 * direction of a link of {@code B} bytes/s; {@code skew} the busiest pserver's CPU over the mean; η
 * the share of the bound that overlap reaches.
 *
 * @param cTrainer trainers' CPU-s per sample (all trainers, without the JIT)
 * @param cPserver pservers' CPU-s per sample (all pservers, without the JIT)
 * @param cThread training threads' CPU-s per sample (all trainers)
 * @param cMaster the master's CPU-s per sample
 * @param cOther the rest of the job's CPU-s per sample on this machine (etcd, the supervisor)
 * @param bytesPerSample bytes per sample on the busier direction between trainers and pservers
 * @param skew the busiest pserver's CPU over the pservers' mean (1 for one pserver)
 * @param lag batches a trainer may have unacknowledged
 * @param batch samples per batch
 */
public record CapacityModel(
    double cTrainer,
    double cPserver,
    double cThread,
    double cMaster,
    double cOther,
    double bytesPerSample,
    double skew,
    int lag,
    int batch) {

  /** The share of the tightest bound that overlapping work reaches (PERF: 0.75-0.85). */
  public static final double ETA = 0.8;

  /** Cores of a node in the predicted setups. */
  public static final int NODE_CORES = 4;

  /** 10 GbE in bytes per second. */
  public static final double TEN_GBE = 10e9 / 8;

  /** One network round trip between two nodes on 10 GbE, without the bytes (two hops). */
  public static final double NODE_RTT_SECONDS = 100e-6;

  /**
   * The model of a measured 1 + 1 (or N + M) job: its CPU per sample by role from {@code cpu}
   * ({@link CpuWindow#figures}), with the JIT taken out, and the given component figures in place
   * of the roles' own where present ({@link Components}).
   *
   * @throws IllegalArgumentException when {@code cpu} lacks a trainer's or a pserver's figures
   */
  public static CapacityModel of(Map<String, Double> cpu, Components c, int lag, int batch) {
    double trainer = withoutJit(cpu, "trainer");
    double pserver = withoutJit(cpu, "pserver");
    if (Double.isNaN(trainer) || Double.isNaN(pserver)) {
      throw new IllegalArgumentException(
          "the capacity model needs the trainers' and pservers' CPU per sample, got " + cpu);
    }
    double thread = cpu.getOrDefault("train_thread_cpu_us_per_sample", trainer * 1e6) / 1e6;
    if (c != null && c.trainerThreadUsPerBatch() > 0) {
      // the component replaces the training thread's part of the trainer's CPU
      double component = c.trainerThreadUsPerBatch() / 1e6 / batch;
      trainer = trainer - thread + component;
      thread = component;
    }
    if (c != null && c.pserverNsPerRow() > 0 && c.rowsPerSample() > 0) {
      // the component replaces the pserver's event-loop part (where its service runs)
      double loop = pserver * cpu.getOrDefault("pserver_loop_share", 0.0);
      pserver = pserver - loop + c.pserverNsPerRow() * 1e-9 * c.rowsPerSample();
    }
    double master = cpu.getOrDefault("master_cpu_us_per_sample", 0.0) / 1e6;
    double other =
        (cpu.getOrDefault("etcd_cpu_us_per_sample", 0.0)
                + cpu.getOrDefault(CpuWindow.SUPERVISOR + "_cpu_us_per_sample", 0.0))
            / 1e6;
    double bytes =
        Math.max(
            cpu.getOrDefault("pserver_read_bytes_per_sample", 0.0),
            cpu.getOrDefault("pserver_written_bytes_per_sample", 0.0));
    double skew = cpu.getOrDefault("pserver_cpu_skew", 1.0);
    return new CapacityModel(
        trainer, pserver, thread, master, other, bytes, Double.isNaN(skew) ? 1 : skew, lag, batch);
  }

  private static double withoutJit(Map<String, Double> cpu, String role) {
    Double us = cpu.get(role + "_cpu_us_per_sample");
    if (us == null) {
      return Double.NaN;
    }
    return us * (1 - cpu.getOrDefault(role + "_jit_share", 0.0)) / 1e6;
  }

  /**
   * Component figures measured apart from contention, which replace the job's own where given (0 or
   * less: absent).
   *
   * @param trainerThreadUsPerBatch the training thread's CPU-µs per batch against an in-process
   *     pserver
   * @param pserverNsPerRow the pserver's ns per pushed row in process (marshaller, service, shard)
   * @param rowsPerSample pushed rows per sample
   */
  public record Components(
      double trainerThreadUsPerBatch, double pserverNsPerRow, double rowsPerSample) {
    /** No component figures: the model uses the job's per-role CPU alone. */
    public static final Components NONE = new Components(0, 0, 0);
  }

  /** Which bound of {@link #predict} is the tightest. */
  public enum Bound {
    TRAINER_CPU,
    PSERVER_CPU,
    NETWORK,
    TRAINING_THREAD,
    ROUND_TRIPS,
    MASTER,
    MACHINE_CPU
  }

  /** A prediction: samples/s and the bound that sets it. */
  public record Prediction(double samplesPerSecond, Bound bound) {}

  /**
   * Samples/s of {@code n} trainers and {@code m} pservers, each on a node of its own with {@code
   * cores} cores, linked at {@code linkBytesPerSecond}. The round trip is {@link #NODE_RTT_SECONDS}
   * plus a batch's bytes each way on the link plus the pserver's CPU for a batch.
   */
  public Prediction predict(int n, int m, int cores, double linkBytesPerSecond) {
    double rtt =
        NODE_RTT_SECONDS
            + 2 * batch * bytesPerSample / linkBytesPerSecond
            + batch * cPserver / Math.max(1, cores);
    double[] bounds = {
      n * cores / cTrainer,
      m * cores / (cPserver * skew(m)),
      bytesPerSample > 0 ? Math.min(n, m) * linkBytesPerSecond / bytesPerSample : inf(),
      cThread > 0 ? n / cThread : inf(),
      lag > 0 ? n * (double) lag * batch / rtt : inf(),
      cMaster > 0 ? 1 / cMaster : inf()
    };
    return tightest(bounds, Bound.values());
  }

  /**
   * Samples/s of {@code n} trainers and {@code m} pservers sharing this machine's {@code cores}
   * (with the master, etcd and the supervisor): the check of the model against this machine's own
   * measurements. Costs measured on one shape stand for the other; only the pservers' skew is taken
   * as 1 beyond one pserver (it is measured per shape).
   */
  public Prediction predictHere(int n, int m, double cores) {
    double all = cTrainer + cPserver + cMaster + cOther;
    double[] bounds = {
      inf(), inf(), inf(), cThread > 0 ? n / cThread : inf(), inf(), inf(), cores / all
    };
    return tightest(bounds, Bound.values());
  }

  private double skew(int m) {
    return m <= 1 ? 1 : Math.max(1, skew);
  }

  private static Prediction tightest(double[] bounds, Bound[] names) {
    int best = 0;
    for (int i = 1; i < bounds.length; i++) {
      if (bounds[i] < bounds[best]) {
        best = i;
      }
    }
    return new Prediction(ETA * bounds[best], names[best]);
  }

  private static double inf() {
    return Double.POSITIVE_INFINITY;
  }

  /** |predicted - measured| / measured. */
  public static double error(double predicted, double measured) {
    return Math.abs(predicted - measured) / measured;
  }
}
