package dev.paramserver.errors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ErrorReasonTest {
  @Test
  void forNumber_givesBackEveryReason_andRefusesAnUnknownNumber() {
    for (ErrorReason r : ErrorReason.values()) {
      assertThat(ErrorReason.forNumber(r.number())).isSameAs(r);
    }
    assertThat(Arrays.stream(ErrorReason.values()).mapToInt(ErrorReason::number).distinct())
        .hasSize(ErrorReason.values().length);
    assertThatThrownBy(() -> ErrorReason.forNumber(10_000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("10000");
  }

  @Test
  void ofName_readsAKnownName_andAnUnknownOneAsUnspecified() {
    assertThat(ErrorReason.ofName("MOVED")).isEqualTo(ErrorReason.MOVED);
    assertThat(ErrorReason.ofName("A_REASON_OF_A_NEWER_SERVER"))
        .isEqualTo(ErrorReason.ERROR_REASON_UNSPECIFIED);
  }

  @Test
  void aServiceException_keepsItsReasonAndMetadata() {
    ServiceException e =
        new ServiceException(
            ErrorReason.NOT_LEADER, "not the leader", java.util.Map.of("leader", "h:1"));
    assertThat(e.reason()).isEqualTo(ErrorReason.NOT_LEADER);
    assertThat(e.metadata()).containsEntry("leader", "h:1");
    assertThat(e).hasMessage("not the leader");
  }
}
