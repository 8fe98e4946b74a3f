package dev.paramserver.pserver.sparse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class AdmissionSketchTest {

  @Test
  void anIdIsAdmittedAtItsThresholdthPush() {
    AdmissionSketch sketch = new AdmissionSketch(1 << 12, 3);
    assertThat(sketch.admit(42)).isFalse();
    assertThat(sketch.admit(42)).isFalse();
    assertThat(sketch.admit(42)).isTrue();
    assertThat(sketch.admit(43)).isFalse();
  }

  @Test
  void oneOffIds_areAlmostNeverAdmitted() {
    AdmissionSketch sketch = new AdmissionSketch(1 << 14, 2);
    int admitted = 0;
    for (long id = 0; id < 4_000; id++) {
      if (sketch.admit(id * 0x9E3779B97F4A7C15L)) {
        admitted++;
      }
    }
    // Count-min overestimates only through collisions of all four hashes: rare at this load.
    assertThat(admitted).isLessThan(40);
  }

  @Test
  void thresholdOne_admitsEverything() {
    AdmissionSketch sketch = new AdmissionSketch(16, 1);
    assertThat(sketch.admit(1)).isTrue();
  }

  @Test
  void badThreshold_isRejected() {
    assertThatThrownBy(() -> new AdmissionSketch(16, 0)).hasMessageContaining("[1, 255]");
    assertThatThrownBy(() -> new AdmissionSketch(0, 2)).hasMessageContaining("sketch width");
  }
}
