package dev.paramserver.psctl.job;

import static dev.paramserver.testsupport.http.JsonHttpServer.answer;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import dev.paramserver.adminapi.BuildInfo;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.psctl.Run;
import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.testsupport.JsonSchemaCheck;
import dev.paramserver.testsupport.http.JsonHttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The job commands' output and errors against an HTTP server answering as a master's {@code
 * /admin/job} does (a recorded answer; the end-to-end tests run them against a real master).
 */
class JobCommandsTest {
  private static final String TOKEN = "s3cret";
  private JsonHttpServer leader;
  private JsonHttpServer standby;
  private final List<String> calls = new CopyOnWriteArrayList<>();
  private volatile String jobJson;

  @BeforeEach
  void start() throws IOException {
    try (InputStream in =
        getClass().getResourceAsStream("/dev/paramserver/psctl/startup/sample-job.json")) {
      jobJson = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    leader =
        JsonHttpServer.builder()
            .context("/admin/job", this::leader)
            .context(
                "/admin/status",
                ex ->
                    answer(
                        ex,
                        200,
                        "{\"role\":\"master\",\"state\":\"LEADER\",\"identity\":\"127.0.0.1:9091\","
                            + "\"leader\":true,\"leaderAddress\":\"127.0.0.1:9091\","
                            + "\"version\":\"9.9.9\",\"commit\":\"abc1234\"}"))
            .start();
    standby = JsonHttpServer.standbyOf(leader, "/admin/job");
  }

  @AfterEach
  void stop() {
    leader.close();
    standby.close();
  }

  private void leader(HttpExchange ex) throws IOException {
    calls.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath());
    if (!("Bearer " + TOKEN).equals(ex.getRequestHeaders().getFirst("Authorization"))) {
      answer(ex, 401, "{\"error\":\"unauthorized\",\"message\":\"wrong admin token\"}");
      return;
    }
    switch (ex.getRequestURI().getPath()) {
      case "/admin/job" -> answer(ex, 200, jobJson);
      case "/admin/job/checkpoint" ->
          answer(
              ex,
              200,
              "{\"checkpoints\":[{\"index\":0,\"ok\":true,\"step\":1234},"
                  + "{\"index\":1,\"ok\":false,\"error\":\"not initialised\"}]}");
      case "/admin/job/stop" ->
          answer(
              ex,
              200,
              "{\"stopped\":true,\"message\":\"the job was stopped\",\"checkpoints\":"
                  + "[{\"index\":0,\"ok\":true,\"step\":1300}]}");
      default -> answer(ex, 404, "{}");
    }
  }

  @Test
  void status_printsTheJobPassesPserversTrainersFlagsAndEvents() {
    Run r = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .contains(
            "RUNNING  pass 2 of 3  tasks 4 todo, 2 pending, 6 done, 0 failed  elapsed 1m0s  ETA"
                + " 1m0s  records/s 1200  ! pserver 1 [hot], trainer trainer-1 [straggler]")
        .contains(
            "pass 1  records 12000  train loss 0.5123  test loss 0.4000  accuracy 0.9100  auc -")
        .contains("pass 2  records 6000  train loss 0.3000  test loss -")
        .contains(
            "0  127.0.0.1:9092  SERVING  step 1234  1.3 KiB  push/s 50.0  pull/s 50.0  p99 0.42 ms"
                + "  checkpoint 12s ago")
        .contains("1  127.0.0.1:9093  SERVING  step 5678")
        .contains("checkpoint none [HOT]")
        .contains("trainer-1  TRAINING  pass 2  task 8  tasks done 2  samples/s 300  loss 0.3100")
        .contains("[STRAGGLER]")
        .contains("pass 2 of 3 started");
  }

  @Test
  void theRecordedAnswer_followsThePublishedSchema() throws IOException {
    JsonNode recorded = new ObjectMapper().readTree(jobJson);
    assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(recorded)).isEmpty();
  }

  @Test
  void status_readsTheFieldsItKnows_fromANewerMasterThatAddsSome() {
    jobJson =
        jobJson
            .replace("\"leader\":true,", "\"leader\":true,\"cluster\":{\"zone\":\"a\"},")
            .replace("\"hot\":true,", "\"hot\":true,\"replicaLag\":3,");
    Run r = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("RUNNING  pass 2 of 3").contains("checkpoint none [HOT]");
  }

  /** The recorded answer with a {@code scaling} object (the recorded one is a master's without). */
  private void withScaling(String scaling) {
    jobJson = jobJson.replace("\"events\":[", "\"scaling\":" + scaling + ",\n \"events\":[");
  }

  @Test
  void status_showsTheScaling_aMoveUnderWayAndTheLastCommittedMove() throws IOException {
    withScaling(
        "{\"epoch\":2,\"pservers\":2,\"desired\":3,\"phase\":\"moving\","
            + "\"move\":{\"id\":\"m-3\",\"epoch\":3,\"from\":0,\"to\":2,\"slots\":128,"
            + "\"blocks\":2,\"result\":null,\"bytes\":null,\"records\":null,\"rows\":null,"
            + "\"copyMs\":null,\"stallMs\":null,\"durationMs\":null},\"lastError\":null,"
            + "\"moves\":[{\"id\":\"m-2\",\"epoch\":2,\"from\":1,\"to\":2,\"slots\":64,"
            + "\"blocks\":0,\"result\":\"rolled back: pserver 2 did not answer\",\"bytes\":null,"
            + "\"records\":null,\"rows\":null,\"copyMs\":null,\"stallMs\":null,"
            + "\"durationMs\":null},"
            + "{\"id\":\"m-1\",\"epoch\":2,\"from\":0,\"to\":2,\"slots\":128,\"blocks\":2,"
            + "\"result\":\"committed\",\"bytes\":1048576,\"records\":12,\"rows\":4096,"
            + "\"copyMs\":80,\"stallMs\":6,\"durationMs\":95}]}");
    assertThat(
            JsonSchemaCheck.of(JobViewSchema.published())
                .errors(new ObjectMapper().readTree(jobJson)))
        .isEmpty();
    Run r = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .contains(
            "scaling: placement epoch 2, pservers 2 of 3, moving; move m-3 under way: pserver 0 ->"
                + " 2, 128 slots, 2 blocks; last move m-1 committed: pserver 0 -> 2, 1.0 MiB,"
                + " copy 80 ms, stall 6 ms, 95 ms in all\n");
    // the line comes after the master's, before the passes
    assertThat(r.out().indexOf("scaling:")).isGreaterThan(r.out().indexOf("master 127.0.0.1:9091"));
    assertThat(r.out().indexOf("scaling:")).isLessThan(r.out().indexOf("passes:"));
  }

  @Test
  void status_listsTheServingReplicas_inTextAndJson() throws IOException {
    assertThat(Run.psctl("status", "--master", leader.url(), "--token", TOKEN).out())
        .as("none registered: no section")
        .doesNotContain("serving replicas:");
    jobJson =
        jobJson.replace(
            "\"events\":[",
            "\"serving\":[{\"id\":\"4f0c\",\"address\":\"127.0.0.1:9094\","
                + "\"adminAddress\":\"127.0.0.1:8086\",\"state\":\"SERVING\",\"source\":\"FOLLOWING\","
                + "\"version\":57,\"sequences\":[1204,998],\"behind\":3,\"lagMs\":12,\"connected\":2},"
                + "{\"id\":\"9a1e\",\"address\":\"127.0.0.1:9095\",\"adminAddress\":\"\","
                + "\"state\":\"LOADING\",\"source\":\"FOLLOWING\",\"version\":0,\"sequences\":[],"
                + "\"behind\":null,\"lagMs\":0,\"connected\":0}],\n \"events\":[");
    assertThat(
            JsonSchemaCheck.of(JobViewSchema.published())
                .errors(new ObjectMapper().readTree(jobJson)))
        .isEmpty();
    Run r = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .contains(
            "serving replicas:\n  127.0.0.1:9094  SERVING  FOLLOWING  version 57  behind 3 updates"
                + "  stream lag 12 ms  streams open 2\n  127.0.0.1:9095  LOADING  FOLLOWING"
                + "  version -  behind -  stream lag 0 ms  streams open 0\n");
    Run json = Run.psctl("status", "--master", leader.url(), "--token", TOKEN, "-o", "json");
    assertThat(json.code()).as(json.err()).isZero();
    JsonNode v = new ObjectMapper().readTree(json.out());
    assertThat(v.at("/serving/0/behind").asLong()).isEqualTo(3);
    assertThat(v.at("/serving/0/sequences").toString()).isEqualTo("[1204,998]");
    assertThat(v.at("/serving/1/behind").isNull()).isTrue();
  }

  @Test
  void status_saysNothingOfScaling_forAJobNeverScaled_orAMasterThatDoesNotSendIt() {
    Run older = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(older.code()).as(older.err()).isZero();
    assertThat(older.out()).doesNotContain("scaling");
    withScaling(
        "{\"epoch\":0,\"pservers\":null,\"desired\":2,\"phase\":\"idle\",\"move\":null,"
            + "\"lastError\":null,\"moves\":[]}");
    Run never = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(never.code()).as(never.err()).isZero();
    assertThat(never.out()).doesNotContain("scaling");
  }

  @Test
  void theScalingLine_namesAFailure_andAMoveRolledBack() {
    JobView.Scaling failed =
        new JobView.Scaling(
            4,
            3,
            2,
            "failed",
            null,
            "pserver 2 did not drain",
            List.of(
                new JobView.Move(
                    "m-9",
                    5,
                    2,
                    0,
                    64,
                    1,
                    "rolled back: timed out",
                    null,
                    null,
                    null,
                    null,
                    null,
                    null)));
    assertThat(JobReport.scaling(failed))
        .isEqualTo(
            "scaling: placement epoch 4, pservers 3 of 2, failed (pserver 2 did not drain);"
                + " last move m-9 rolled back: timed out");
    assertThat(
            JobReport.scaling(
                new JobView.Scaling(
                    0, null, 2, "waiting for pserver 2 to register", null, null, List.of())))
        .isEqualTo(
            "scaling: placement epoch 0, pservers 2 of 2, waiting for pserver 2 to register");
    // asked for, the first map just written (epoch 0), no move yet
    assertThat(JobReport.scaling(new JobView.Scaling(0, 2, 3, "idle", null, null, List.of())))
        .isEqualTo("scaling: placement epoch 0, pservers 2 of 3, idle");
    assertThat(JobReport.scaling(new JobView.Scaling(0, 2, 2, "idle", null, null, List.of())))
        .isNull();
  }

  @Test
  void status_beforeTheMastersFirstSample_saysNothingIsKnownYet() {
    jobJson =
        "{\"leader\":true,\"job\":{},\"events\":[{\"time\":1764569940000,\"kind\":\"leader\","
            + "\"message\":\"master 127.0.0.1:9091 leads the job\"}]}";
    Run r = Run.psctl("status", "--master", leader.url(), "--token", TOKEN);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("?  pass 0 of 0")
        .contains("(none registered)")
        .contains("leads the job");
  }

  @Test
  void status_followsAStandbyToTheLeader_andJsonPrintsTheAnswer() {
    Run r = Run.psctl("status", "--master", standby.url() + "/", "--token", TOKEN, "--json");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("\"totalPasses\" : 3");
    assertThat(calls).containsExactly("GET /admin/job");
  }

  @Test
  void theTokenComesFromTheEnvironment_andAWrongOneIsAClearError() {
    StatusCommand cmd = new StatusCommand();
    cmd.env = java.util.Map.of(JobTarget.TOKEN_ENV, TOKEN);
    java.io.StringWriter out = new java.io.StringWriter();
    picocli.CommandLine cl = new picocli.CommandLine(cmd);
    cl.setOut(new java.io.PrintWriter(out, true));
    assertThat(cl.execute("--master", leader.url())).isZero();
    assertThat(out.toString()).contains("pass 2 of 3");

    Run wrong = Run.psctl("status", "--master", leader.url(), "--token", "nope");
    assertThat(wrong.code()).isEqualTo(1);
    assertThat(wrong.err())
        .contains("the master refused the admin token (wrong admin token)")
        .contains("PARAMSERVER_ADMIN_TOKEN");
  }

  @Test
  void missingTargetOrTokenAndBadUrlsAreUsageErrors() {
    Run noTarget = Run.psctl("status", "--token", TOKEN);
    assertThat(noTarget.code()).isEqualTo(2);
    assertThat(noTarget.err()).contains("--master URL, or --etcd ENDPOINTS and --job NAME");
    StatusCommand cmd = new StatusCommand();
    cmd.env = java.util.Map.of();
    java.io.StringWriter err = new java.io.StringWriter();
    picocli.CommandLine cl = new picocli.CommandLine(cmd);
    cl.setErr(new java.io.PrintWriter(err, true));
    assertThat(cl.execute("--master", leader.url())).isEqualTo(2);
    Run badUrl = Run.psctl("status", "--master", "127.0.0.1:8081", "--token", TOKEN);
    assertThat(badUrl.code()).isEqualTo(2);
    assertThat(badUrl.err()).contains("--master must be an HTTP URL");
    Run down = Run.psctl("status", "--master", "http://127.0.0.1:1", "--token", TOKEN);
    assertThat(down.code()).isEqualTo(ExitCodes.UNREACHABLE);
    assertThat(down.err()).contains("cannot connect to the master at http://127.0.0.1:1");
  }

  @Test
  void watch_printsALinePerIntervalAndStopsWhenTheJobEnds() {
    Run r =
        Run.psctl(
            "watch",
            "--master",
            leader.url(),
            "--token",
            TOKEN,
            "--interval",
            "0.05",
            "--count",
            "2",
            "--no-bar");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out().lines().toList())
        .hasSize(2)
        .allSatisfy(l -> assertThat(l).contains("RUNNING  pass 2 of 3").endsWith("loss 0.3000"));

    jobJson = jobJson.replace("\"state\":\"RUNNING\"", "\"state\":\"FINISHED\"");
    Run bar = Run.psctl("watch", "--master", leader.url(), "--token", TOKEN, "--bar");
    assertThat(bar.code()).isZero();
    assertThat(bar.out())
        .contains("pass 3/3 [##############################] 100%")
        .contains("FINISHED");
  }

  @Test
  void checkpointStopAndWatch_speakJsonAndYaml() throws Exception {
    Run cp = Run.psctl("checkpoint", "--master", leader.url(), "--token", TOKEN, "-o", "json");
    assertThat(cp.code()).isEqualTo(1); // one pserver failed, in JSON too
    JsonNode checkpoints = new ObjectMapper().readTree(cp.out()).path("checkpoints");
    assertThat(checkpoints.get(0).path("step").asLong()).isEqualTo(1234);
    assertThat(checkpoints.get(1).path("error").asString()).isEqualTo("not initialised");

    Run stop = Run.psctl("stop", "--master", leader.url(), "--token", TOKEN, "-o", "yaml");
    assertThat(stop.code()).as(stop.err()).isZero();
    assertThat(stop.out()).contains("stopped: true").contains("step: 1300");

    Run watch =
        Run.psctl(
            "watch",
            "--master",
            leader.url(),
            "--token",
            TOKEN,
            "--interval",
            "0.05",
            "--count",
            "2",
            "-o",
            "json");
    assertThat(watch.code()).as(watch.err()).isZero();
    List<String> lines = watch.out().lines().toList();
    assertThat(lines).hasSize(2); // JSON Lines: one view per poll
    for (String line : lines) {
      assertThat(new ObjectMapper().readTree(line).path("job").path("state").asString())
          .isEqualTo("RUNNING");
    }
  }

  @Test
  void checkpointAndStop_printEachPserversResult() {
    Run cp = Run.psctl("checkpoint", "--master", leader.url(), "--token", TOKEN);
    assertThat(cp.code()).isEqualTo(1); // one pserver failed
    assertThat(cp.out())
        .contains("pserver 0: checkpoint at step 1234")
        .contains("pserver 1: FAILED: not initialised");
    Run stop = Run.psctl("stop", "--master", leader.url(), "--token", TOKEN);
    assertThat(stop.code()).isZero();
    assertThat(stop.out())
        .contains("pserver 0: checkpoint at step 1300")
        .contains("the job was stopped");
    assertThat(calls).contains("POST /admin/job/checkpoint", "POST /admin/job/stop");
  }

  @Test
  void watch_exits3WhenTheJobFailed_and4WhenTheMasterStaysUnreachable() {
    jobJson = jobJson.replace("\"state\":\"RUNNING\"", "\"state\":\"FAILED\"");
    Run failed = Run.psctl("watch", "--master", leader.url(), "--token", TOKEN, "--no-bar");
    assertThat(failed.code()).as(failed.err()).isEqualTo(ExitCodes.JOB_FAILED);
    assertThat(failed.out()).contains("FAILED");

    Run down =
        Run.psctl(
            "watch", "--master", "http://127.0.0.1:1", "--token", TOKEN, "--interval", "0.01");
    assertThat(down.code()).isEqualTo(ExitCodes.UNREACHABLE);
    assertThat(down.out().lines()).hasSize(WatchCommand.UNANSWERED - 1);
    assertThat(down.err()).contains("cannot connect to the master at http://127.0.0.1:1");

    Run refused = Run.psctl("watch", "--master", leader.url(), "--token", "nope");
    assertThat(refused.code()).isEqualTo(ExitCodes.ERROR);
    assertThat(refused.err()).contains("refused the admin token");
  }

  @Test
  void theMasterAndTokenComeFromTheEnvironment_andFlagsOverrideIt() {
    Map<String, String> env = Map.of("PSCTL_MASTER", leader.url(), "PSCTL_TOKEN", TOKEN);
    Run fromEnv = Run.withEnv(env, "status");
    assertThat(fromEnv.code()).as(fromEnv.err()).isZero();
    assertThat(fromEnv.out()).contains("RUNNING  pass 2 of 3");

    Map<String, String> stale =
        Map.of("PSCTL_MASTER", "http://127.0.0.1:1", "PSCTL_TOKEN", "stale-token");
    Run flags = Run.withEnv(stale, "status", "--master", leader.url(), "--token", TOKEN);
    assertThat(flags.code()).as(flags.err()).isZero();
    Run envOnly = Run.withEnv(stale, "status");
    assertThat(envOnly.code()).isEqualTo(ExitCodes.UNREACHABLE);

    Run serviceToken =
        Run.withEnv(
            Map.of("PSCTL_MASTER", leader.url(), "PARAMSERVER_ADMIN_TOKEN", TOKEN), "status");
    assertThat(serviceToken.code()).as(serviceToken.err()).isZero();
  }

  @Test
  void statusJson_isTheViewAsThePublishedSchemaDescribesIt() throws IOException {
    jobJson = jobJson.replace("\"leader\":true,", "\"leader\":true,\"newerField\":1,");
    Run r = Run.psctl("status", "--master", leader.url(), "--token", TOKEN, "-o", "json");
    assertThat(r.code()).as(r.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(r.out());
    assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(json)).isEmpty();
    assertThat(json.path("job").path("state").asString()).isEqualTo("RUNNING");
    assertThat(json.path("job").path("totalPasses").asInt()).isEqualTo(3);
    assertThat(json.has("newerField")).isFalse();
    // --json keeps printing the answer as it is
    Run raw = Run.psctl("status", "--master", leader.url(), "--token", TOKEN, "--json");
    assertThat(new ObjectMapper().readTree(raw.out()).has("newerField")).isTrue();
  }

  @Test
  void version_showsTheClientsBuildAndTheMasters() throws IOException {
    BuildInfo build = BuildInfo.current();
    assertThat(build.version()).isNotEqualTo("unknown");
    Run text = Run.psctl("version", "--master", leader.url(), "--token", TOKEN);
    assertThat(text.code()).as(text.err()).isZero();
    assertThat(text.out())
        .contains("psctl " + build.version() + " (commit " + build.commit() + ")")
        .contains("master 9.9.9 (commit abc1234) at " + leader.url() + ", LEADER");

    Run json = Run.psctl("version", "--master", leader.url(), "--token", TOKEN, "-o", "json");
    assertThat(json.code()).as(json.err()).isZero();
    JsonNode v = new ObjectMapper().readTree(json.out());
    assertThat(v.path("client").path("version").asString()).isEqualTo(build.version());
    assertThat(v.path("client").path("commit").asString()).isEqualTo(build.commit());
    assertThat(v.path("server").path("version").asString()).isEqualTo("9.9.9");
    assertThat(v.path("server").path("state").asString()).isEqualTo("LEADER");
    assertThat(v.has("serverError")).isFalse();
  }

  @Test
  void version_withTheMasterUnreachable_saysSo_andStillPrintsTheClients() throws IOException {
    Run text = Run.psctl("version", "--master", "http://127.0.0.1:1", "--token", TOKEN);
    assertThat(text.code()).isEqualTo(ExitCodes.UNREACHABLE);
    assertThat(text.out())
        .contains("psctl " + BuildInfo.current().version())
        .contains("master: unreachable: cannot connect to the master at http://127.0.0.1:1");
    Run json =
        Run.psctl(
            "version", "--master", "http://127.0.0.1:1", "--token", TOKEN, "--output", "json");
    assertThat(json.code()).isEqualTo(ExitCodes.UNREACHABLE);
    JsonNode v = new ObjectMapper().readTree(json.out());
    assertThat(v.path("client").path("version").asString())
        .isEqualTo(BuildInfo.current().version());
    assertThat(v.has("server")).isFalse();
    assertThat(v.path("serverError").asString()).contains("cannot connect");

    Run clientOnly = Run.withEnv(Map.of(), "version");
    assertThat(clientOnly.code()).isZero();
    assertThat(clientOnly.out().strip()).startsWith("psctl ").doesNotContain("master");
  }
}
