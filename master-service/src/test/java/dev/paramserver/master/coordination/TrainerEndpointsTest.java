package dev.paramserver.master.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import org.junit.jupiter.api.Test;

/** A coordinated trainer's registration: its own endpoint, or the peer's host with port 0. */
class TrainerEndpointsTest {
  @Test
  void noEndpoint_isThePeersHostWithPortZero() {
    assertThat(TrainerEndpoints.registration("", "10.1.2.3")).isEqualTo("10.1.2.3:0");
    assertThat(TrainerEndpoints.registration("", "::1")).isEqualTo("[::1]:0");
  }

  @Test
  void anEndpointOnThePeersHost_isKept_byAddressOrByAName() {
    assertThat(TrainerEndpoints.registration("10.1.2.3:8080", "10.1.2.3"))
        .isEqualTo("10.1.2.3:8080");
    assertThat(TrainerEndpoints.registration("localhost:8080", "127.0.0.1"))
        .isEqualTo("localhost:8080");
  }

  @Test
  void anEndpointOnAnotherHost_orMalformed_isRefused() {
    ServiceException other =
        catchThrowableOfType(
            ServiceException.class,
            () -> TrainerEndpoints.registration("10.9.9.9:8080", "10.1.2.3"));
    assertThat(other.reason()).isEqualTo(ErrorReason.BAD_ARGUMENT);
    assertThat(other.getMessage()).contains("10.9.9.9:8080", "10.1.2.3:8080");
    ServiceException bad =
        catchThrowableOfType(
            ServiceException.class, () -> TrainerEndpoints.registration("nohost", "10.1.2.3"));
    assertThat(bad.getMessage()).contains("'nohost' is not host:port");
  }
}
