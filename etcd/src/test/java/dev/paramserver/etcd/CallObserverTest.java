package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.testsupport.EtcdExtension;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CallObserverTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  record Call(String operation, long nanos, boolean success) {}

  @Test
  void everyAwaitedCall_isReportedWithAFixedOperationName() throws Exception {
    List<Call> calls = new CopyOnWriteArrayList<>();
    try (EtcdCoordinator coordinator =
        EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()))) {
      coordinator.setCallObserver((op, nanos, ok) -> calls.add(new Call(op, nanos, ok)));
      String p = coordinator.keys().prefix();
      coordinator.kv().put(p + "a", "1".getBytes(UTF_8));
      coordinator.kv().get(p + "a");
      coordinator.kv().getPrefix(p);
      coordinator.kv().delete(p + "a");
      try (Lease lease = coordinator.grantLease(java.time.Duration.ofSeconds(5))) {
        coordinator.kv().putIfAbsent(p + "b", "2".getBytes(UTF_8), lease);
      }

      assertThat(calls)
          .extracting(Call::operation)
          .containsSubsequence(
              "put", "get", "get-prefix", "delete", "lease-grant", "create-if-absent");
      assertThat(calls).allSatisfy(c -> assertThat(c.success()).isTrue());
      assertThat(calls).allSatisfy(c -> assertThat(c.nanos()).isPositive());

      coordinator.setCallObserver(null);
      int before = calls.size();
      coordinator.kv().get(p + "a");
      assertThat(calls).hasSize(before);
    }
  }

  @Test
  void operationNames_neverContainKeys() {
    assertThat(EtcdCalls.operationOf("get /paramserver/j/ps/0")).isEqualTo("get");
    assertThat(EtcdCalls.operationOf("get prefix /paramserver/j/")).isEqualTo("get-prefix");
    assertThat(EtcdCalls.operationOf("lease grant (ttl 10s)")).isEqualTo("lease-grant");
    assertThat(EtcdCalls.operationOf("commit of 2 puts and 0 deletes fenced on /k"))
        .isEqualTo("commit");
  }
}
