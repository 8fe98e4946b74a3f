package dev.paramserver.psctl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import org.junit.jupiter.api.Test;

class ArchiveCommandTest {
  @Test
  void jvmOptions_compileWithC1AtTheServicesStartUpThresholds() {
    assertThat(ArchiveCommand.jvmOptions(17))
        .contains("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
        .containsAll(ClusterSpec.START_UP_JIT_OPTIONS);
  }

  @Test
  void jvmOptions_turnProfileReplayOffOnlyWhereTheCacheHoldsProfiles() {
    assertThat(ArchiveCommand.jvmOptions(17)).doesNotContain("-XX:-AOTReplayTraining");
    assertThat(ArchiveCommand.jvmOptions(24)).doesNotContain("-XX:-AOTReplayTraining");
    assertThat(ArchiveCommand.jvmOptions(25))
        .containsSubsequence("-XX:+UnlockDiagnosticVMOptions", "-XX:-AOTReplayTraining");
  }
}
