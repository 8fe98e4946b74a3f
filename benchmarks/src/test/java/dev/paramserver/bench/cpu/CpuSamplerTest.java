package dev.paramserver.bench.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CpuSamplerTest {
  @Test
  void window_countsTheNamedTrainingThreadsCpuAsTheJvmMeasuresIt() throws Exception {
    assumeThat(CpuSampler.available()).as("/proc").isTrue();
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    AtomicLong cpuAtStart = new AtomicLong();
    AtomicLong cpuAtEnd = new AtomicLong();
    long[] marks = new long[2];
    try (CpuSampler sampler = CpuSampler.start()) {
      sampler.watch("single", ProcessHandle.current().pid(), "cpu-burner");
      Thread burner =
          new Thread(
              () -> {
                cpuAtStart.set(mx.getCurrentThreadCpuTime());
                sampler.sampleNow();
                marks[0] = System.nanoTime();
                long x = 0;
                long until = System.nanoTime() + 400_000_000L;
                while (System.nanoTime() < until) {
                  x += Long.numberOfTrailingZeros(x + System.nanoTime());
                }
                cpuAtEnd.set(mx.getCurrentThreadCpuTime() + (x == 42 ? 1 : 0));
                sampler.sampleNow();
                marks[1] = System.nanoTime();
              },
              "cpu-burner");
      burner.start();
      burner.join();
      CpuWindow w = sampler.window(marks[0], marks[1], 1000);
      Map<String, Double> f = w.figures();
      double burned = (cpuAtEnd.get() - cpuAtStart.get()) / 1000.0 / 1000; // us per sample
      assertThat(f.get("train_thread_cpu_us_per_sample"))
          .isCloseTo(burned, org.assertj.core.data.Offset.offset(burned * 0.2 + 10));
      // the process spent at least what its training thread did (ticks: 10 ms resolution)
      assertThat(f.get("single_cpu_us_per_sample")).isGreaterThan(burned * 0.8 - 20);
      assertThat(f.get("train_thread_run_share") + f.get("train_thread_wait_share"))
          .isGreaterThan(0.5);
      assertThat(f.get("train_thread_blocked_share")).isLessThan(0.5);
    }
  }

  @Test
  void interpolate_readsCountersBetweenSamplesLinearlyAndHoldsThemOutside() {
    List<ProcessTrack.Sample> samples =
        List.of(
            new ProcessTrack.Sample(1000, new double[] {0, 10}),
            new ProcessTrack.Sample(2000, new double[] {100, 30}));

    assertThat(ProcessTrack.interpolate(samples, 1500)).containsExactly(50, 20);
    assertThat(ProcessTrack.interpolate(samples, 500)).containsExactly(0, 10);
    assertThat(ProcessTrack.interpolate(samples, 9000)).containsExactly(100, 30);
    assertThat(ProcessTrack.interpolate(List.of(), 9000)).isNull();
  }

  @Test
  void afterName_skipsAThreadNameWithSpacesAndParentheses() {
    String[] f = ProcessTrack.afterName("42 (C2 Compiler) x)) S 1 2 3 4 5 6 7 8 9 10 250 30 0");
    assertThat(f[0]).isEqualTo("S");
    assertThat(f[11]).isEqualTo("250");
    assertThat(f[12]).isEqualTo("30");
  }

  @Test
  void threadKind_tellsTheJitTheLoopsAndTheTrainingThreadApart() {
    assertThat(ThreadKind.of("C2 CompilerThre", "main")).isEqualTo(ThreadKind.JIT);
    assertThat(ThreadKind.of("C1 CompilerThre", "main")).isEqualTo(ThreadKind.JIT);
    assertThat(ThreadKind.of("grpc-default-wo", "main")).isEqualTo(ThreadKind.LOOP);
    assertThat(ThreadKind.of("grpc-nio-worker", "main")).isEqualTo(ThreadKind.LOOP);
    assertThat(ThreadKind.of("trainer-loop", "trainer-loop")).isEqualTo(ThreadKind.TRAIN);
    assertThat(ThreadKind.of("a-very-long-thr", "a-very-long-thread-name"))
        .isEqualTo(ThreadKind.TRAIN);
    assertThat(ThreadKind.of("GC Thread#0", null)).isEqualTo(ThreadKind.GC);
    assertThat(ThreadKind.of("etcd", null)).isEqualTo(ThreadKind.OTHER);
  }
}
