package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.testsupport.EtcdExtension;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class IndexClaimTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator a;
  private EtcdCoordinator b;

  @BeforeEach
  void connect() {
    String job = etcd.uniqueJob();
    a = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
    b = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
  }

  @AfterEach
  void close() {
    a.close();
    b.close();
  }

  @Test
  void claimIndex_givesLowestFree_andReclaimsAfterLeaseExpires() throws Exception {
    String prefix = a.keys().psPrefix();
    try (RawLeases raw = new RawLeases(etcd.endpoint())) {
      Lease dying = raw.unkept(2);
      Lease leaseB = b.grantLease(Duration.ofSeconds(10));
      assertThat(a.claimIndex(prefix, 2, "p0".getBytes(UTF_8), dying, Duration.ofSeconds(1)))
          .isZero();
      assertThat(b.claimIndex(prefix, 2, "p1".getBytes(UTF_8), leaseB, Duration.ofSeconds(1)))
          .isEqualTo(1);

      assertThatThrownBy(() -> b.claimIndex(prefix, 2, new byte[0], leaseB, Duration.ofMillis(300)))
          .isInstanceOf(CoordinationException.class)
          .hasMessageContaining(prefix)
          .hasMessageContaining("all 2");

      Lease leaseC = a.grantLease(Duration.ofSeconds(10));
      int again =
          a.claimIndex(prefix, 2, "p0-again".getBytes(UTF_8), leaseC, Duration.ofSeconds(10));
      assertThat(again).isZero();
      assertThat(a.kv().get(a.keys().ps(0)).orElseThrow().valueAsString()).isEqualTo("p0-again");
    }
  }

  @Test
  void claimIndex_withPreferredIndex_takesItWhenFree_elseTheLowestFree() throws Exception {
    String prefix = a.keys().psPrefix();
    Lease lease = a.grantLease(Duration.ofSeconds(10));
    assertThat(a.claimIndex(prefix, 3, new byte[0], lease, Duration.ofSeconds(1), 2)).isEqualTo(2);
    assertThat(a.claimIndex(prefix, 3, new byte[0], lease, Duration.ofSeconds(1), 2)).isZero();
    assertThat(a.claimIndex(prefix, 3, new byte[0], lease, Duration.ofSeconds(1), 7)).isEqualTo(1);
  }
}
