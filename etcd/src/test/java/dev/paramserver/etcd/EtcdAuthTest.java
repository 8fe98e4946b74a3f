package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.testsupport.EtcdExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * etcd with authentication on: the coordinator passes the user and password of its settings to
 * jetcd, and a wrong password is refused with a clear error. The etcd here is this test's own (auth
 * cannot be turned off without the root password), so it does not disturb other tests.
 */
class EtcdAuthTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }

  @Test
  void userAndPassword_arePassedToEtcd_andAWrongPasswordIsRefused() throws Exception {
    try (Client admin = Client.builder().endpoints(etcd.endpoint()).build()) {
      var auth = admin.getAuthClient();
      auth.userAdd(bytes("root"), bytes("rootpw")).get(10, TimeUnit.SECONDS);
      auth.roleAdd(bytes("root")).get(10, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("root"), bytes("root")).get(10, TimeUnit.SECONDS);
      auth.authEnable().get(10, TimeUnit.SECONDS);
    }
    String job = etcd.uniqueJob();
    EtcdSettings good =
        new EtcdSettings(
            List.of(etcd.endpoint()), job, Duration.ofSeconds(5), "root", "rootpw", null);
    try (EtcdCoordinator c = EtcdCoordinator.connect(good)) {
      c.kv().put(c.keys().prefix() + "k", "v".getBytes(UTF_8));
      assertThat(c.kv().get(c.keys().prefix() + "k").orElseThrow().valueAsString()).isEqualTo("v");
    }
    assertThat(good.toString()).doesNotContain("rootpw");

    EtcdSettings wrong =
        new EtcdSettings(
            List.of(etcd.endpoint()), job, Duration.ofSeconds(3), "root", "nope", null);
    try (EtcdCoordinator c = EtcdCoordinator.connect(wrong)) {
      assertThatThrownBy(() -> c.kv().get(c.keys().prefix() + "k"))
          .isInstanceOf(CoordinationException.class);
    }
  }
}
