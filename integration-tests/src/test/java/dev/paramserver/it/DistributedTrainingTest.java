package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.localcluster.StartupOptions;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.testsupport.Poll;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The whole system as separate processes: a real etcd, one master, two pservers and two trainers
 * train softmax regression on demo data; the accuracy reached, the master's accounting and the
 * exported model are checked.
 */
class DistributedTrainingTest {
  private static String scrape(int httpPort) throws Exception {
    return Jobs.scrapePrometheus(httpPort);
  }

  /** The histogram family has buckets for each method (so histogram_quantile works). */
  private static void assertHistograms(String metrics, String family, String... methods) {
    for (String method : methods) {
      assertThat(
              metrics
                  .lines()
                  .anyMatch(
                      l ->
                          l.startsWith(family + "{")
                              && l.contains("grpc_method=\"" + method + "\"")
                              && l.contains("le=")))
          .as("%s buckets for %s", family, method)
          .isTrue();
    }
  }

  @TempDir Path dir;

  @Test
  void softmaxOnTwoPserversAndTwoTrainers_reachesAccuracyAndAccountsForEveryTask()
      throws Exception {
    Path data = dir.resolve("data");
    DemoData.Result demo =
        DemoData.generate(
            data, DemoData.Options.builder().train(20000).test(4000).shards(2).build());
    int passes = 2;
    Path model = dir.resolve("run").resolve("model.pb");
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("e2e")
                .masters(1)
                .pservers(2)
                .trainers(2)
                .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
                .property(
                    Role.TRAINER, "paramserver.trainer.train-data", data + "/train-*.recordio")
                .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
                .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
                .property(Role.TRAINER, "paramserver.trainer.model-output", model.toString())
                // trainers stay up after the job, so their metrics can be read and they can be
                // stopped through the admin endpoint
                .property(Role.TRAINER, "paramserver.trainer.exit-when-done", "false")
                .build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && !s.passes().isEmpty()
                          && s.passes().get(s.passes().size() - 1).evalReports() >= 1,
              Duration.ofMinutes(5));
      assertThat(end.state())
          .as("job state; failure: %s", end.failureReason())
          .isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, passes);
      // the local cluster starts every service from the bean definitions its build computed
      // (Spring AOT), and the job above trained with them; unless this environment sets a property
      // a bean condition reads, which the services would inherit
      boolean aot = !StartupOptions.environmentReadsConditions(System.getenv());
      for (String name : new String[] {"master-0", "pserver-0", "pserver-1", "trainer-0"}) {
        String log = Files.readString(dir.resolve("run").resolve("logs").resolve(name + ".log"));
        assertThat(log.contains("Starting AOT-processed"))
            .as("%s's log: AOT-processed", name)
            .isEqualTo(aot);
      }
      JobStatusView.PassView last = end.passes().get(passes - 1);
      assertThat(last.evalAccuracy()).as("test accuracy after the last pass").isGreaterThan(0.90);
      assertThat(last.evalLoss()).isLessThan(0.5);

      // the final model was written by one trainer (after it reported the last evaluation), and
      // psctl evaluate reproduces the accuracy
      Poll.until(Duration.ofSeconds(60), () -> Files.exists(model), "the final model written");
      StringWriter out = new StringWriter();
      CommandLine cl = Psctl.commandLine();
      cl.setOut(new PrintWriter(out, true));
      int code =
          cl.execute("evaluate", "--model", model.toString(), "--data", demo.testFile().toString());
      assertThat(code).isZero();
      Matcher m = Pattern.compile("accuracy=([0-9.]+)").matcher(out.toString());
      assertThat(m.find()).as(out.toString()).isTrue();
      assertThat(Double.parseDouble(m.group(1)))
          .isCloseTo(last.evalAccuracy(), org.assertj.core.data.Offset.offset(0.005));

      // latency histograms for every RPC method used, on both sides (trainers report finished
      // tasks within GetTask, so TaskFinished is not among them; asynchronous pushes go on
      // StreamPushes calls, still open while the trainers run: timed per push by the trainer)
      assertHistograms(
          scrape(cluster.process(Role.MASTER, 0).httpPort()),
          "grpc_server_call_duration_seconds_bucket",
          "paramserver.v1.Master/SetDataset",
          "paramserver.v1.Master/GetTask",
          "paramserver.v1.Master/ReportEvaluation");
      for (int ps = 0; ps < 2; ps++) {
        assertHistograms(
            scrape(cluster.process(Role.PSERVER, ps).httpPort()),
            "grpc_server_call_duration_seconds_bucket",
            "paramserver.v1.ParameterServer/InitParameters",
            "paramserver.v1.ParameterServer/FinishInit",
            "paramserver.v1.ParameterServer/PullParameters",
            "paramserver.v1.ParameterServer/GetShardStatus");
      }
      String trainerMetrics = scrape(cluster.process(Role.TRAINER, 0).httpPort());
      assertHistograms(
          trainerMetrics,
          "grpc_client_call_duration_seconds_bucket",
          "paramserver.v1.Master/GetTask",
          "paramserver.v1.ParameterServer/PullParameters");
      assertThat(trainerMetrics).contains("paramserver_trainer_samples_total");
      Matcher roundTrips =
          Pattern.compile(
                  "(?m)^paramserver_trainer_push_round_trip_seconds_count\\S* ([0-9.eE+]+)$")
              .matcher(trainerMetrics);
      assertThat(roundTrips.find()).as("the streamed pushes' round-trip timer").isTrue();
      assertThat(Double.parseDouble(roundTrips.group(1))).as("streamed pushes timed").isPositive();

      // admin: 401 without the token; with it, status and a graceful shutdown (202, then exit 0)
      int trainerHttp = cluster.process(Role.TRAINER, 1).httpPort();
      HttpClient http = HttpClient.newHttpClient();
      URI status = URI.create("http://127.0.0.1:" + trainerHttp + "/admin/status");
      assertThat(
              http.send(HttpRequest.newBuilder(status).build(), BodyHandlers.ofString())
                  .statusCode())
          .isEqualTo(401);
      HttpResponse<String> ok =
          http.send(
              HttpRequest.newBuilder(status)
                  .header("Authorization", "Bearer " + cluster.adminToken())
                  .build(),
              BodyHandlers.ofString());
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).contains("\"role\":\"trainer\"").contains("\"state\":\"FINISHED\"");
      URI shutdown = URI.create("http://127.0.0.1:" + trainerHttp + "/admin/shutdown");
      assertThat(
              http.send(
                      HttpRequest.newBuilder(shutdown)
                          .POST(HttpRequest.BodyPublishers.noBody())
                          .build(),
                      BodyHandlers.ofString())
                  .statusCode())
          .isEqualTo(401);
      long pid = cluster.process(Role.TRAINER, 1).pid();
      assertThat(
              http.send(
                      HttpRequest.newBuilder(shutdown)
                          .header("Authorization", "Bearer " + cluster.adminToken())
                          .POST(HttpRequest.BodyPublishers.noBody())
                          .build(),
                      BodyHandlers.ofString())
                  .statusCode())
          .isEqualTo(202);
      ProcessHandle handle = ProcessHandle.of(pid).orElse(null);
      if (handle != null) {
        handle.onExit().get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
          .as("trainer-1 exited after the admin shutdown")
          .isFalse();
      // trainer-0 stays up (exit-when-done=false): closing a finished job's cluster would wait the
      // whole stop timeout (20 s) for it to exit on its own
      cluster.stop(Role.TRAINER, 0);
    }
    assertThat(Files.exists(dir.resolve("run").resolve("cluster.json"))).isTrue();
  }
}
