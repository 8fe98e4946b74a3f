package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.BuildInfo;
import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.testsupport.JsonSchemaCheck;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * psctl's job commands against a real local cluster, the master and token from the environment:
 * version shows the master's build, status -o json follows the published schema (found through etcd
 * too), stop ends the job, watch then exits 3 (the job failed), and once the cluster is gone status
 * exits 4 (the master cannot be reached).
 */
class PsctlJobCommandsEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private record Result(int code, String out, String err) {}

  private static Result psctl(Map<String, String> env, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Psctl.commandLine(env);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return new Result(cl.execute(args), out.toString(), err.toString());
  }

  @Test
  void psctl_readsAndStopsARealJob_andTellsAFailedJobFromAnUnreachableMaster() throws Exception {
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder().train(20000).test(1000).shards(2).build());
    ClusterSpec spec =
        Jobs.spec(dir.resolve("run"))
            .job("job-psctl")
            .masters(1)
            .pservers(1)
            .trainers(1)
            .property(Role.MASTER, "paramserver.master.passes", "100")
            .property(
                Role.TRAINER,
                "paramserver.trainer.train-data",
                dir.resolve("data") + "/train-*.recordio")
            .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
            .build();
    String master;
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      master = "http://127.0.0.1:" + cluster.process(Role.MASTER, 0).httpPort();
      Map<String, String> env = Map.of("PSCTL_MASTER", master, "PSCTL_TOKEN", cluster.adminToken());
      cluster.awaitJob(s -> "RUNNING".equals(s.state()), Duration.ofMinutes(2));

      Result version = psctl(env, "version", "-o", "json");
      assertThat(version.code()).as(version.err()).isZero();
      JsonNode v = JSON.readTree(version.out());
      assertThat(v.path("server").path("version").asString())
          .isEqualTo(BuildInfo.current().version());
      assertThat(v.path("server").path("commit").asString())
          .isEqualTo(BuildInfo.current().commit());
      assertThat(v.path("server").path("state").asString()).isEqualTo("LEADER");

      // the console samples the job every sample-interval: its view may still be the one from
      // before the dataset was set, so read it until it catches up (bounded)
      Result status = psctl(env, "status", "-o", "json");
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (status.code() == 0
          && !"RUNNING".equals(JSON.readTree(status.out()).path("job").path("state").asString())
          && System.nanoTime() < deadline) {
        Thread.sleep(200);
        status = psctl(env, "status", "-o", "json");
      }
      assertThat(status.code()).as(status.err()).isZero();
      JsonNode view = JSON.readTree(status.out());
      assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(view)).isEmpty();
      assertThat(view.path("job").path("state").asString()).isEqualTo("RUNNING");
      assertThat(view.path("job").path("totalPasses").asInt()).isEqualTo(100);

      Result viaEtcd =
          psctl(
              Map.of("PSCTL_TOKEN", cluster.adminToken()),
              "status",
              "--etcd",
              cluster.etcdEndpoint(),
              "--job",
              "job-psctl");
      assertThat(viaEtcd.code()).as(viaEtcd.err()).isZero();
      assertThat(viaEtcd.out()).contains("pass ").contains("of 100");

      Result stop = psctl(env, "stop");
      assertThat(stop.code()).as(stop.out() + stop.err()).isZero();
      Result watch = psctl(env, "watch", "--no-bar", "--interval", "0.2");
      assertThat(watch.code()).as(watch.out() + watch.err()).isEqualTo(ExitCodes.JOB_FAILED);
      assertThat(watch.out()).contains("FAILED");
    }
    Result down = psctl(Map.of("PSCTL_MASTER", master, "PSCTL_TOKEN", "x"), "status");
    assertThat(down.code()).as(down.err()).isEqualTo(ExitCodes.UNREACHABLE);
    assertThat(down.err()).contains("cannot connect to the master at " + master);
  }
}
