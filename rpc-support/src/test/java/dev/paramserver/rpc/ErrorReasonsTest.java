package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The errors module's ErrorReason and the proto enum paramserver.v1.ErrorReason are one list. */
class ErrorReasonsTest {
  @Test
  void everyProtoReason_mapsToTheJavaOneOfTheSameNameAndNumber_andBack() {
    for (dev.paramserver.proto.v1.ErrorReason p : dev.paramserver.proto.v1.ErrorReason.values()) {
      if (p == dev.paramserver.proto.v1.ErrorReason.UNRECOGNIZED) {
        continue;
      }
      ErrorReason java = RpcErrors.fromProto(p);
      assertThat(java.name()).as("the Java reason numbered %d", p.getNumber()).isEqualTo(p.name());
      assertThat(java.number()).isEqualTo(p.getNumber());
      assertThat(RpcErrors.toProto(java)).isSameAs(p);
    }
  }

  @Test
  void everyJavaReason_isInTheProto() {
    for (ErrorReason r : ErrorReason.values()) {
      assertThat(RpcErrors.toProto(r))
          .as("%s(%d) in errors.proto", r, r.number())
          .isNotNull()
          .extracting(Enum::name)
          .isEqualTo(r.name());
    }
    assertThat(ErrorReason.values())
        .hasSize(
            (int)
                Arrays.stream(dev.paramserver.proto.v1.ErrorReason.values())
                    .filter(p -> p != dev.paramserver.proto.v1.ErrorReason.UNRECOGNIZED)
                    .count());
  }

  @Test
  void unrecognized_isUnspecified() {
    assertThat(RpcErrors.fromProto(dev.paramserver.proto.v1.ErrorReason.UNRECOGNIZED))
        .isEqualTo(ErrorReason.ERROR_REASON_UNSPECIFIED);
  }
}
