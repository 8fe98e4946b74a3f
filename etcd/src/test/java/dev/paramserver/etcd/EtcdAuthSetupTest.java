package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.testsupport.EtcdExtension;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Authentication turned on in a real etcd (this test's own: it cannot be turned off again without
 * the root password) by {@link EtcdAuthSetup}: the job user reads and writes its job's keys, holds
 * a lease and campaigns, and is refused another job's keys; anonymous calls are refused; a second
 * run finds authentication on and only brings the passwords up to date.
 */
@Timeout(120)
class EtcdAuthSetupTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static EtcdSettings as(String job, String user, String password) {
    return new EtcdSettings(
        List.of(etcd.endpoint()), job, Duration.ofSeconds(5), user, password, null);
  }

  @Test
  void ensure_turnsAuthOn_theJobUserKeepsToItsJob_andARerunUpdatesThePassword() {
    String job = etcd.uniqueJob();
    EtcdAuthSetup setup = new EtcdAuthSetup(List.of(etcd.endpoint()), job, Duration.ofSeconds(10));
    assertThat(setup.ensure("root-pw", "jobuser", "first")).as("turned on now").isTrue();

    try (EtcdCoordinator c = EtcdCoordinator.connect(as(job, "jobuser", "first"))) {
      c.kv().put(c.keys().prefix() + "k", "v".getBytes(UTF_8));
      assertThat(c.kv().get(c.keys().prefix() + "k").orElseThrow().valueAsString()).isEqualTo("v");
      try (Lease lease = c.grantLease(Duration.ofSeconds(10))) {
        assertThat(c.kv().putIfAbsent(c.keys().prefix() + "leased", new byte[] {1}, lease))
            .isTrue();
      }
    }
    try (EtcdCoordinator other = EtcdCoordinator.connect(as("other-job", "jobuser", "first"))) {
      assertThatThrownBy(() -> other.kv().get(other.keys().prefix() + "k"))
          .as("another job's keys")
          .isInstanceOf(CoordinationException.class);
    }
    try (EtcdCoordinator anonymous = EtcdCoordinator.connect(as(job, null, null))) {
      assertThatThrownBy(() -> anonymous.kv().get(anonymous.keys().prefix() + "k"))
          .isInstanceOf(CoordinationException.class);
    }

    assertThat(setup.ensure("root-pw", "jobuser", "second")).as("already on").isFalse();
    try (EtcdCoordinator c = EtcdCoordinator.connect(as(job, "jobuser", "second"))) {
      assertThat(c.kv().get(c.keys().prefix() + "k").orElseThrow().valueAsString()).isEqualTo("v");
    }
    try (EtcdCoordinator old = EtcdCoordinator.connect(as(job, "jobuser", "first"))) {
      assertThatThrownBy(() -> old.kv().get(old.keys().prefix() + "k"))
          .isInstanceOf(CoordinationException.class);
    }
    assertThatThrownBy(() -> setup.ensure("wrong-root", "jobuser", "second"))
        .isInstanceOf(CoordinationException.class);
  }

  @Test
  void prefixEnd_isTheFirstKeyAfterThePrefix() {
    assertThat(EtcdAuthSetup.prefixEnd("/paramserver/j/")).isEqualTo("/paramserver/j0");
  }
}
