package dev.paramserver.psctl.job;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.psctl.Run;
import dev.paramserver.testsupport.EtcdExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code psctl etcd-auth} against a real etcd (this test's own: authentication stays on), then
 * {@code psctl status --etcd} and {@code psctl force-takeover} logging in as the job user it made.
 */
@Timeout(120)
class EtcdAuthCommandTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @Test
  void etcdAuth_turnsAuthOnOnce_andPsctlReadsTheJobAsTheJobUser() {
    String job = etcd.uniqueJob();
    Map<String, String> env =
        Map.of(JobTarget.ETCD_PASSWORD_ENV, "job-pw", EtcdAuthCommand.ROOT_PASSWORD_ENV, "root-pw");
    String[] auth = {
      "etcd-auth", "--etcd", etcd.endpoint(), "--job", job, "--etcd-user", "jobuser"
    };

    Run first = Run.withEnv(env, auth);
    assertThat(first.code()).as(first.err()).isZero();
    assertThat(first.out())
        .contains("etcd authentication turned on: user jobuser (role paramserver-" + job + ")")
        .doesNotContain("job-pw", "root-pw");
    Run again = Run.withEnv(env, auth);
    assertThat(again.code()).as(again.err()).isZero();
    assertThat(again.out()).contains("etcd authentication was on");

    String[] status = {
      "status", "--etcd", etcd.endpoint(), "--job", job, "--etcd-user", "jobuser", "--token", "t"
    };
    Run logged = Run.withEnv(env, status);
    assertThat(logged.err())
        .as("read etcd as the job user: no master is registered, nothing refused")
        .contains("no leader master is registered for job '" + job + "'");
    Run wrong = Run.withEnv(Map.of(JobTarget.ETCD_PASSWORD_ENV, "guess"), status);
    assertThat(wrong.code()).isNotZero();
    assertThat(wrong.err()).doesNotContain("no leader master is registered");

    // force-takeover logs in too
    try (EtcdCoordinator c =
        EtcdCoordinator.connect(
            new EtcdSettings(
                List.of(etcd.endpoint()), job, Duration.ofSeconds(5), "jobuser", "job-pw", null))) {
      c.kv().put(c.keys().psBackup(0), "127.0.0.1:7001".getBytes(StandardCharsets.UTF_8));
      c.kv().put(c.keys().psSync(0), ShardSyncRecord.outOfSync(42, 1_000).encode());
    }
    Run takeover =
        Run.withEnv(
            env,
            "force-takeover",
            "--etcd",
            etcd.endpoint(),
            "--job",
            job,
            "--etcd-user",
            "jobuser",
            "--shard",
            "0");
    assertThat(takeover.code()).as(takeover.err()).isZero();
    assertThat(takeover.out()).contains("nothing forced: run again with --yes");

    Run noRoot = Run.withEnv(Map.of(JobTarget.ETCD_PASSWORD_ENV, "job-pw"), auth);
    assertThat(noRoot.code()).isEqualTo(2);
    assertThat(noRoot.err()).contains("--root-password-file", "PSCTL_ETCD_ROOT_PASSWORD");
  }
}
