package dev.paramserver.psctl.job;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.psctl.Run;
import dev.paramserver.testsupport.EtcdExtension;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code psctl force-takeover} against a real etcd holding a shard that waits for its log. */
@Timeout(60)
class ForceTakeoverCommandTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @Test
  void printsWhatMayBeLost_writesOnlyWithYes_andRefusesAShardWithAPrimary() throws Exception {
    String job = etcd.uniqueJob();
    try (EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      c.kv().put(c.keys().psBackup(0), "127.0.0.1:7001".getBytes(StandardCharsets.UTF_8));
      c.kv().put(c.keys().psSync(0), ShardSyncRecord.outOfSync(42, 1_000).encode());

      Run dry =
          Run.psctl("force-takeover", "--etcd", etcd.endpoint(), "--job", job, "--shard", "0");
      assertThat(dry.code()).as(dry.err()).isZero();
      assertThat(dry.out())
          .contains("LOSES every push")
          .contains("epoch 42")
          .contains("127.0.0.1:7001")
          .contains("nothing forced: run again with --yes");
      assertThat(ShardSyncRecord.read(c.kv(), c.keys(), 0).orElseThrow().isForced()).isFalse();

      Run dryJson =
          Run.psctl(
              "force-takeover",
              "--etcd",
              etcd.endpoint(),
              "--job",
              job,
              "--shard",
              "0",
              "-o",
              "json");
      assertThat(dryJson.code()).as(dryJson.err()).isZero();
      assertThat(dryJson.out())
          .contains("\"shard\" : 0")
          .contains("\"forced\" : false")
          .contains("LOSES every push")
          .doesNotContain("nothing forced");

      Run forced =
          Run.psctl(
              "force-takeover",
              "--etcd",
              etcd.endpoint(),
              "--job",
              job,
              "--shard",
              "0",
              "--yes",
              "--reason",
              "disk of pserver 0 lost");
      assertThat(forced.code()).as(forced.err()).isZero();
      assertThat(forced.out()).contains("forced by").contains("audit record");
      ShardSyncRecord r = ShardSyncRecord.read(c.kv(), c.keys(), 0).orElseThrow();
      assertThat(r.isForced()).isTrue();
      assertThat(r.forcedBy()).contains("disk of pserver 0 lost");
      assertThat(c.kv().getPrefix(c.keys().prefix() + "audit/force-takeover/0/"))
          .singleElement()
          .satisfies(k -> assertThat(k.valueAsString()).contains("LOSES every push"));

      c.kv().put(c.keys().ps(0), "127.0.0.1:7000".getBytes(StandardCharsets.UTF_8));
      Run held =
          Run.psctl(
              "force-takeover", "--etcd", etcd.endpoint(), "--job", job, "--shard", "0", "--yes");
      assertThat(held.code()).isEqualTo(1);
      assertThat(held.err()).contains("has a primary");
    }
  }
}
