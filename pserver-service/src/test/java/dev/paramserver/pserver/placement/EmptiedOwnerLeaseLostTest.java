package dev.paramserver.pserver.placement;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A shrink from three pservers to two has committed every move: index 2 owns nothing and waits for
 * the coordinator to drain and shut it down. Its lease is lost then (a pause, a loaded machine)
 * while pserver 0's process is down, so {@code ps/0} is free. The emptied pserver must register
 * again under its own index 2 (where the coordinator looks for it), never take index 0 and load
 * pserver 0's checkpoint (an integration test under load found it doing so, and the shrink's drain
 * then failed with "pserver 2 is not registered").
 */
class EmptiedOwnerLeaseLostTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @Test
  @Timeout(180)
  void emptiedPserverThatLostItsLease_registersAgainUnderItsOwnIndex_notAFreeOne()
      throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      SlotMap map = c.committed(2);
      for (SlotMove m : map.movesTo(map.resized(3), 1 << 14)) {
        map = c.commit(map, m);
      }
      c.setDesired(2);
      for (SlotMove m : map.movesTo(map.resized(2), 1 << 14)) {
        map = c.commit(map, m);
      }
      assertThat(c.store.read().places(2)).as("index 2 owns nothing after the shrink").isFalse();

      c.stop(0);
      KeyValueStore kv = c.coordinator.kv();
      Poll.until(
          Duration.ofSeconds(30),
          () -> kv.get(c.coordinator.keys().ps(0)).isEmpty(),
          "ps/0 released by the stopped pserver 0");
      KeyValueStore.KeyValue two = kv.get(c.coordinator.keys().ps(2)).orElseThrow();
      revoke(two.leaseId());

      // it registers again under a new lease, at index 2 and nowhere else (the key is written in
      // etcd before the process records the index it claimed: both are waited for)
      ShardRegistration registration = c.context(2).getBean(ShardRegistration.class);
      Poll.until(
          Duration.ofSeconds(60),
          () -> {
            Optional<KeyValueStore.KeyValue> now = kv.get(c.coordinator.keys().ps(2));
            return now.isPresent()
                && now.get().leaseId() != two.leaseId()
                && registration.index() == 2;
          },
          "pserver 2 registered again under index 2 after its lease was revoked");
      assertThat(registration.index()).isEqualTo(2);
      assertThat(kv.get(c.coordinator.keys().ps(2)).orElseThrow().valueAsString())
          .isEqualTo(two.valueAsString());
      // the old claim could have taken ps/0 at any moment of its retries: give it time to show
      Thread.sleep(2_000);
      assertThat(kv.get(c.coordinator.keys().ps(0)))
          .as("the free index of the stopped pserver 0 is left to it")
          .isEmpty();
    }
  }

  /** Revokes {@code leaseId} through etcd's JSON gateway, as an operator (or etcd) would end it. */
  private static void revoke(long leaseId) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(etcd.endpoint() + "/v3/lease/revoke"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"ID\":\"" + leaseId + "\"}"))
                    .timeout(Duration.ofSeconds(10))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
  }
}
