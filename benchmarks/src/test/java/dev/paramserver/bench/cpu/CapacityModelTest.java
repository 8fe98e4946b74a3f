package dev.paramserver.bench.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import org.junit.jupiter.api.Test;

class CapacityModelTest {
  // the click-through 1 + 1 job of the cost model: trainer 34.6 CPU-us/sample, pserver 30.3
  // (without the JIT), training thread 20.5, master 1, etcd 1, about 1 KB a sample each way
  private static final Map<String, Double> CTR =
      Map.of(
          "trainer_cpu_us_per_sample", 34.6,
          "pserver_cpu_us_per_sample", 30.3,
          "train_thread_cpu_us_per_sample", 20.5,
          "master_cpu_us_per_sample", 1.0,
          "etcd_cpu_us_per_sample", 1.0,
          "pserver_read_bytes_per_sample", 1000.0,
          "pserver_written_bytes_per_sample", 900.0,
          "pserver_loop_share", 0.8);

  @Test
  void predict_onNodesIsEtaTimesTheTightestBound() {
    CapacityModel m = CapacityModel.of(CTR, CapacityModel.Components.NONE, 2, 256);

    CapacityModel.Prediction p = m.predict(4, 4, 4, CapacityModel.TEN_GBE);

    // 4 pservers x 4 cores / 30.3 us = 528 k/s; 4 trainers x 4 / 34.6 = 462 k/s; the four
    // training threads 4 / 20.5 us = 195 k/s: the tightest
    assertThat(p.bound()).isEqualTo(CapacityModel.Bound.TRAINING_THREAD);
    assertThat(p.samplesPerSecond()).isCloseTo(0.8 * 4 / 20.5e-6, within(1.0));
    // one trainer and pserver: the thread again; the network (1.25 GB/s / 1 KB) is far off
    CapacityModel.Prediction one = m.predict(1, 1, 4, CapacityModel.TEN_GBE);
    assertThat(one.samplesPerSecond()).isCloseTo(0.8 / 20.5e-6, within(1.0));
  }

  @Test
  void predictHere_sharesThisMachinesCoresAmongAllTheJobsProcesses() {
    CapacityModel m = CapacityModel.of(CTR, CapacityModel.Components.NONE, 2, 256);

    CapacityModel.Prediction p = m.predictHere(1, 1, 2);

    assertThat(p.bound()).isEqualTo(CapacityModel.Bound.MACHINE_CPU);
    assertThat(p.samplesPerSecond()).isCloseTo(0.8 * 2 / 66.9e-6, within(1.0));
    assertThat(CapacityModel.error(p.samplesPerSecond(), 24_000)).isCloseTo(0.0, within(0.01));
  }

  @Test
  void of_takesTheJitOutAndComponentFiguresInPlaceOfTheThreadAndTheLoop() {
    Map<String, Double> withJit =
        Map.of(
            "trainer_cpu_us_per_sample", 50.0,
            "trainer_jit_share", 0.2,
            "pserver_cpu_us_per_sample", 30.0,
            "pserver_loop_share", 0.5,
            "train_thread_cpu_us_per_sample", 20.0);

    CapacityModel bare = CapacityModel.of(withJit, CapacityModel.Components.NONE, 2, 256);
    assertThat(bare.cTrainer()).isCloseTo(40e-6, within(1e-12));
    assertThat(bare.cThread()).isCloseTo(20e-6, within(1e-12));
    assertThat(bare.skew()).isEqualTo(1.0);

    // components: the thread 1,280 us per batch of 256 = 5 us/sample; the pserver 100 ns x 20 rows
    CapacityModel c =
        CapacityModel.of(withJit, new CapacityModel.Components(1280, 100, 20), 2, 256);
    assertThat(c.cThread()).isCloseTo(5e-6, within(1e-12));
    assertThat(c.cTrainer()).isCloseTo(25e-6, within(1e-12));
    assertThat(c.cPserver()).isCloseTo(15e-6 + 2e-6, within(1e-12));
  }

  @Test
  void of_refusesCostsWithoutATrainerOrAPserver() {
    assertThatThrownBy(
            () ->
                CapacityModel.of(
                    Map.of("trainer_cpu_us_per_sample", 1.0),
                    CapacityModel.Components.NONE,
                    2,
                    256))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pservers' CPU per sample");
  }
}
