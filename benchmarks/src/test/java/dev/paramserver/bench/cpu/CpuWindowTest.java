package dev.paramserver.bench.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CpuWindowTest {
  /** A process's counters over a window: CPU ns from ticks, bytes, and per kind run/wait/slices. */
  private static CpuWindow.Spent spent(
      String role,
      double cpuNs,
      double readBytes,
      double jitNs,
      double trainRun,
      double trainWait) {
    double[] d = new double[ProcessTrack.WIDTH];
    d[ProcessTrack.CPU_NS] = cpuNs;
    d[ProcessTrack.READ_BYTES] = readBytes;
    d[ProcessTrack.runNs(ThreadKind.JIT)] = jitNs;
    d[ProcessTrack.runNs(ThreadKind.TRAIN)] = trainRun;
    d[ProcessTrack.waitNs(ThreadKind.TRAIN)] = trainWait;
    d[ProcessTrack.slices(ThreadKind.TRAIN)] = trainRun > 0 ? 100 : 0;
    return new CpuWindow.Spent(role, 1, d);
  }

  @Test
  void figures_givePerRoleCpuPerSampleCoresJitAndTheTrainingThreadsShares() {
    // 2 s, 10,000 samples: a trainer of 1.0 CPU-s (JIT 0.2), a pserver 0.6, etcd 0.1, the
    // supervisor 0.3 (not in 'all'); the training thread ran 0.8 s and waited 0.4 s for a CPU
    CpuWindow w =
        new CpuWindow(
            2.0,
            10_000,
            List.of(
                spent("trainer", 1.0e9, 0, 0.2e9, 0.8e9, 0.4e9),
                spent("pserver", 0.6e9, 5e6, 0, 0, 0),
                spent("etcd", 0.1e9, 0, 0, 0, 0),
                spent(CpuWindow.SUPERVISOR, 0.3e9, 0, 0, 0, 0)),
            4.0e9);

    Map<String, Double> f = w.figures();

    assertThat(f.get("trainer_cpu_us_per_sample")).isCloseTo(100, within(1e-9));
    assertThat(f.get("trainer_jit_share")).isCloseTo(0.2, within(1e-9));
    assertThat(f.get("pserver_cpu_us_per_sample")).isCloseTo(60, within(1e-9));
    assertThat(f.get("all_cpu_us_per_sample")).isCloseTo(170, within(1e-9));
    assertThat(f.get("all_cpu_us_per_sample_no_jit")).isCloseTo(150, within(1e-9));
    assertThat(f.get("all_cores")).isCloseTo(0.85, within(1e-9));
    assertThat(f.get("supervisor_cores")).isCloseTo(0.15, within(1e-9));
    assertThat(f.get("train_thread_run_share")).isCloseTo(0.4, within(1e-9));
    assertThat(f.get("train_thread_wait_share")).isCloseTo(0.2, within(1e-9));
    assertThat(f.get("train_thread_blocked_share")).isCloseTo(0.4, within(1e-9));
    assertThat(f.get("train_thread_cpu_us_per_sample")).isCloseTo(80, within(1e-9));
    assertThat(f.get("train_thread_us_per_slice")).isCloseTo(8000, within(1e-9));
    assertThat(f.get("pserver_read_bytes_per_sample")).isCloseTo(500, within(1e-9));
    assertThat(f.get("pserver_cpu_skew")).isCloseTo(1, within(1e-9));
    // the machine kept 2 cores busy; the sampled processes 1.0 of them
    assertThat(f.get("machine_cores_busy")).isCloseTo(2.0, within(1e-9));
    assertThat(f.get("other_cores_busy")).isCloseTo(1.0, within(1e-9));
  }

  @Test
  void figures_areEmptyForAWindowWithoutSamplesOrRecords() {
    assertThat(CpuWindow.empty().figures()).isEmpty();
    assertThat(new CpuWindow(1, 0, List.of(spent("trainer", 1, 0, 0, 0, 0)), 1).figures())
        .isEmpty();
  }
}
