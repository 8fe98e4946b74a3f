package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.BuildInfo;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.adminapi.ServiceStatus;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.master.MasterContexts;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.master.tracking.TrackingFiles;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.JsonSchemaCheck;
import dev.paramserver.testsupport.Poll;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * {@code /admin/job} and the console page on two real master contexts against a real etcd: the
 * leader answers the job, a standby names the leader, the token is required; registrations in etcd
 * are looked at through the services' own endpoints.
 */
class JobConsoleEndpointTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private final MasterContexts masters = new MasterContexts();
  @TempDir Path tmp;

  @AfterEach
  void close() {
    masters.close();
  }

  /** A JSON object's keys, in order. */
  private static java.util.List<String> keys(JsonNode json) {
    java.util.List<String> keys = new java.util.ArrayList<>();
    json.propertyNames().forEach(keys::add);
    return keys;
  }

  private static JsonNode json(HttpResponse<String> r) {
    try {
      return new ObjectMapper().readTree(r.body());
    } catch (tools.jackson.core.JacksonException e) {
      throw new AssertionError("not JSON: " + r.body(), e);
    }
  }

  @Test
  void leaderAnswersTheJob_standbyNamesTheLeader_tokenRequired_registrationsAreProbed()
      throws Exception {
    String job = etcd.uniqueJob();
    String[] fast = {
      "--paramserver.master.console.sample-interval=200ms",
      "--paramserver.master.tracking.metrics-file=" + tmp.resolve("x/metrics.jsonl")
    };
    ConfigurableApplicationContext leader = masters.start(etcd.endpoint(), job, fast);
    MasterElection election = MasterContexts.election(leader);
    assertThat(
            leader
                .getBean(dev.paramserver.master.config.MasterProperties.class)
                .tracking()
                .metricsFile())
        .isEqualTo(tmp.resolve("x/metrics.jsonl"));
    // checked at start: the metrics file's directory exists, the event files go to the job's
    // default tracking directory
    assertThat(leader.getBean(TrackingFiles.class).metricsFile())
        .isEqualTo(tmp.resolve("x/metrics.jsonl"));
    assertThat(tmp.resolve("x")).isDirectory();
    Poll.until(Duration.ofSeconds(15), election::isLeader, "the first master to lead");
    ConfigurableApplicationContext standby = masters.start(etcd.endpoint(), job, fast);
    String leaderHttp = "127.0.0.1:" + MasterContexts.httpPort(leader);
    String standbyHttp = "127.0.0.1:" + MasterContexts.httpPort(standby);

    // a "trainer" registration pointing at the standby's HTTP port (a real /admin/status), and a
    // "pserver" registration pointing at the leader's gRPC port (which has no GetShardStatus)
    try (EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      c.kv().put(c.keys().trainer("t-1"), standbyHttp.getBytes(StandardCharsets.UTF_8));
      c.kv().put(c.keys().ps(0), election.identity().getBytes(StandardCharsets.UTF_8));
    }

    assertThat(masters.get(leader, "/admin/job", false).statusCode()).isEqualTo(401);
    Poll.until(
        Duration.ofSeconds(15),
        () -> {
          HttpResponse<String> r = masters.get(leader, "/admin/job", true);
          return r.statusCode() == 200
              && json(r).path("trainers").size() == 1
              && json(r).path("pservers").size() == 1;
        },
        "the leader's /admin/job to show the registered trainer and pserver");
    JsonNode view = json(masters.get(leader, "/admin/job", true));
    assertThat(view.path("leader").asBoolean()).isTrue();
    assertThat(view.path("job").path("state").asString()).isEqualTo("WAITING_FOR_DATASET");
    assertThat(view.path("job").path("adminAddress").asString()).isEqualTo(leaderHttp);
    assertThat(view.path("series").path("time").isArray()).isTrue();
    JsonNode trainer = view.path("trainers").get(0);
    assertThat(trainer.path("id").asString()).isEqualTo("t-1");
    assertThat(trainer.path("state").asString()).isEqualTo("STANDBY"); // read with the token
    assertThat(trainer.path("error").asString()).isEmpty();
    assertThat(view.path("pservers").size()).as(view.toString()).isEqualTo(1);
    JsonNode pserver = view.path("pservers").get(0);
    assertThat(pserver.path("index").asInt()).isZero();
    assertThat(pserver.path("state").asString()).isEqualTo("UNREACHABLE");
    assertThat(pserver.path("down").asBoolean()).isTrue();
    assertThat(view.path("events").toString()).contains("leads the job");
    // the placement coordinator's view: never scaled, no ps_desired written in this job
    JsonNode scaling = view.path("scaling");
    assertThat(scaling.path("epoch").asLong()).as(view.toString()).isZero();
    assertThat(scaling.path("phase").asString()).isEqualTo("idle");
    assertThat(scaling.path("move").isNull()).isTrue();
    assertThat(scaling.path("moves").isArray()).isTrue();
    // without ?passes every pass and no count (the answer as it always was); with it, the latest
    // N and the count of the earlier ones; a negative count is refused
    assertThat(view.has("passesOmitted")).as(view.toString()).isFalse();
    JsonNode latest = json(masters.get(leader, "/admin/job?passes=0", true));
    assertThat(latest.path("passes").isArray()).as(latest.toString()).isTrue();
    assertThat(latest.path("passes").size()).isZero();
    assertThat(latest.path("passesOmitted").isInt()).as(latest.toString()).isTrue();
    assertThat(latest.path("passesOmitted").asInt()).isEqualTo(view.path("passes").size());
    HttpResponse<String> negative = masters.get(leader, "/admin/job?passes=-1", true);
    assertThat(negative.statusCode()).isEqualTo(400);
    assertThat(json(negative).path("error").asString()).contains("passes must be 0 or more");

    // admin-api's client, as psctl uses it: sent to the standby, it follows it to the leader,
    // reads the view into the records and the leader's build from /admin/status
    AdminClient client =
        AdminClient.create(
            "the master", "http://" + standbyHttp, MasterContexts.TOKEN, Duration.ofSeconds(5));
    JobView typed = client.job();
    assertThat(client.base()).isEqualTo("http://" + leaderHttp);
    assertThat(typed.passesOmitted()).isNull();
    assertThat(client.job(10).passesOmitted()).isNotNull();
    assertThat(typed.job().state()).isEqualTo("WAITING_FOR_DATASET");
    assertThat(typed.trainers()).extracting(JobView.Trainer::id).containsExactly("t-1");
    ServiceStatus status = client.status();
    assertThat(status.role()).isEqualTo("master");
    assertThat(status.state()).isEqualTo("LEADER");
    assertThat(status.version()).isEqualTo(BuildInfo.current().version());
    assertThat(status.commit()).isEqualTo(BuildInfo.current().commit());
    // the answer follows the schema the master publishes (a standby too), which is admin-api's
    HttpResponse<String> schema = masters.get(standby, "/admin/job/schema", true);
    assertThat(schema.statusCode()).isEqualTo(200);
    assertThat(schema.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(schema.body()).isEqualTo(JobViewSchema.published());
    assertThat(JsonSchemaCheck.of(schema.body()).errors(view)).as(view.toString()).isEmpty();
    assertThat(JsonSchemaCheck.of(schema.body()).errors(latest)).as(latest.toString()).isEmpty();

    HttpResponse<String> fromStandby = masters.get(standby, "/admin/job", true);
    assertThat(fromStandby.statusCode()).isEqualTo(409);
    JsonNode s = json(fromStandby);
    assertThat(s.path("leaderAddress").asString()).isEqualTo(election.identity());
    assertThat(s.path("leaderAdminAddress").asString()).isEqualTo(leaderHttp);
    // every leader-only endpoint answers a standby the same way (one handler)
    for (HttpResponse<String> r :
        java.util.List.of(
            masters.get(standby, "/admin/job/scaling", true),
            masters.post(standby, "/admin/job/scale?pservers=2"),
            masters.post(standby, "/admin/job/checkpoint"),
            masters.post(standby, "/admin/job/stop"))) {
      assertThat(r.statusCode()).as(r.body()).isEqualTo(409);
      JsonNode body = json(r);
      assertThat(body.path("error").asString()).isEqualTo("not the leader");
      assertThat(body.path("leader").asBoolean(true)).isFalse();
      assertThat(body.path("leaderAddress").asString()).isEqualTo(election.identity());
      assertThat(body.path("message").asString()).contains("the leader is at");
    }
    // the scaling's own endpoint: the keys it always had
    JsonNode scalingNow = json(masters.get(leader, "/admin/job/scaling", true));
    assertThat(keys(scalingNow))
        .containsExactly("epoch", "pservers", "desired", "phase", "move", "lastError", "moves");
    assertThat(scalingNow.path("phase").asString()).isEqualTo("idle");

    // no pserver answers: nothing checkpointed; no dataset yet: the job cannot be stopped
    JsonNode cp = json(masters.post(leader, "/admin/job/checkpoint"));
    assertThat(cp.path("checkpoints").size()).isZero();
    JsonNode stop = json(masters.post(leader, "/admin/job/stop"));
    assertThat(stop.path("stopped").asBoolean()).isFalse();
    assertThat(stop.path("message").asString()).contains("no dataset");

    // the console page is served without the token (it asks for it) and its chart library too
    HttpResponse<String> page = masters.get(leader, "/", false);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("paramserver console").doesNotContain("https://");
    assertThat(masters.get(leader, "/webjars/uplot/dist/uPlot.iife.min.js", false).statusCode())
        .isEqualTo(200);
  }
}
