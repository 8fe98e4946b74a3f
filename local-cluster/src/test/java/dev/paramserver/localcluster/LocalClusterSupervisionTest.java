package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The supervision mechanics (launch, kill, restart, stop, pause, close, etcd stop/start) with a
 * real etcd and trivial long-running commands in place of the services: the services' own behaviour
 * is covered by the end-to-end tests.
 */
class LocalClusterSupervisionTest {
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path runDir;
  private LocalCluster cluster;
  private final List<ClusterEvent> events = new CopyOnWriteArrayList<>();

  /** Masters and pservers sleep; trainer-i exits with 0 once the file done-i appears. */
  private static final ServiceCommand SLEEPERS =
      ctx ->
          ctx.role() == Role.TRAINER
              ? List.of(
                  "sh",
                  "-c",
                  "while [ ! -e done-"
                      + ctx.index()
                      + " ]; do sleep 0.05; done; rm -f done-"
                      + ctx.index())
              : List.of("sleep", "600");

  private LocalCluster start(ServiceCommand command, UnaryOperator<ClusterSpec.Builder> tune) {
    ClusterSpec.Builder b =
        ClusterSpec.builder(runDir)
            .job("t")
            .masters(1)
            .pservers(2)
            .trainers(1)
            .restartBackoff(Duration.ofMillis(50))
            .stopTimeout(Duration.ofSeconds(5))
            .command(command, false);
    cluster = new LocalCluster(tune.apply(b).build());
    cluster.addListener(events::add);
    cluster.start();
    return cluster;
  }

  @AfterEach
  void closeCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void start_runsEveryProcessInPlaceAndListsItInClusterJson() throws Exception {
    start(SLEEPERS, b -> b);

    List<ProcessInfo> procs = cluster.processes();
    assertThat(procs)
        .extracting(ProcessInfo::name)
        .containsExactly("master-0", "pserver-0", "pserver-1", "trainer-0");
    assertThat(procs).allMatch(p -> p.state() == ProcessState.RUNNING && alive(p.pid()));
    // setsid exec'd in place: the pid we supervise is the command itself
    ProcessInfo master = cluster.process(Role.MASTER, 0);
    // (setpriv execs the command: on a loaded machine that may take a moment after start)
    await()
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () ->
                assertThat(ProcessHandle.of(master.pid()).orElseThrow().info().command().orElse(""))
                    .endsWith("sleep"));
    assertThat(procs).extracting(ProcessInfo::httpPort).doesNotHaveDuplicates();
    assertThat(master.grpcPort()).isPositive().isNotEqualTo(master.httpPort());
    assertThat(cluster.process(Role.TRAINER, 0).grpcPort()).isZero();

    JsonNode json = clusterJson();
    assertThat(json.path("job").asString()).isEqualTo("t");
    assertThat(json.path("adminToken").asString()).isEqualTo(cluster.adminToken()).hasSize(32);
    assertThat(json.path("etcd").path("endpoint").asString()).isEqualTo(cluster.etcdEndpoint());
    assertThat(json.path("etcd").path("pid").asLong()).isEqualTo(cluster.etcdPid());
    List<Long> pids = new ArrayList<>();
    json.path("processes").forEach(p -> pids.add(p.path("pid").asLong()));
    assertThat(pids).containsExactlyElementsOf(procs.stream().map(ProcessInfo::pid).toList());
    assertThat(Files.readString(master.log())).contains("starting master-0");
    assertThat(httpGet(cluster.etcdEndpoint() + "/health")).contains("true");
  }

  @Test
  void kill_restartsTheProcessOnTheSamePortsAndCountsIt() throws Exception {
    start(SLEEPERS, b -> b);
    ProcessInfo before = cluster.process(Role.PSERVER, 1);

    ProcessInfo killed = cluster.kill(Role.PSERVER, 1);

    assertThat(killed.pid()).isEqualTo(before.pid());
    assertThat(alive(before.pid())).isFalse();
    assertThat(cluster.process(Role.PSERVER, 1).state())
        .isIn(ProcessState.RESTARTING, ProcessState.RUNNING);
    await()
        .atMost(WAIT)
        .until(
            () -> {
              ProcessInfo p = cluster.process(Role.PSERVER, 1);
              return p.state() == ProcessState.RUNNING && p.pid() != before.pid();
            });
    ProcessInfo after = cluster.process(Role.PSERVER, 1);
    assertThat(after.restarts()).isEqualTo(1);
    assertThat(after.httpPort()).isEqualTo(before.httpPort());
    assertThat(after.grpcPort()).isEqualTo(before.grpcPort());
    assertThat(alive(after.pid())).isTrue();
    assertThat(events)
        .extracting(ClusterEvent::message)
        .contains(
            "pserver-1 (pid " + before.pid() + ") exited with code 137; restarting (restart 1)");
    assertThat(Files.readString(after.log())).contains("restarting pserver-1 (restart 1)");
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              JsonNode p = clusterJson().path("processes").get(2);
              assertThat(p.path("pid").asLong()).isEqualTo(after.pid());
              assertThat(p.path("restarts").asInt()).isEqualTo(1);
            });
    // the other processes were left alone
    assertThat(cluster.process(Role.PSERVER, 0).restarts()).isZero();
  }

  @Test
  void killWithoutRestart_staysStoppedUntilRestartedByHand() {
    start(SLEEPERS, b -> b);
    long pid = cluster.process(Role.MASTER, 0).pid();

    cluster.kill(Role.MASTER, 0, false);

    assertThat(cluster.process(Role.MASTER, 0).state()).isEqualTo(ProcessState.STOPPED);
    await()
        .during(Duration.ofMillis(500))
        .atMost(WAIT)
        .until(() -> cluster.process(Role.MASTER, 0).state() == ProcessState.STOPPED);
    assertThat(cluster.process(Role.MASTER, 0).pid()).isEqualTo(pid);

    ProcessInfo back = cluster.restart(Role.MASTER, 0);

    assertThat(back.pid()).isNotEqualTo(pid);
    assertThat(back.state()).isEqualTo(ProcessState.RUNNING);
    assertThat(back.restarts()).isEqualTo(1);
    assertThat(alive(back.pid())).isTrue();
  }

  @Test
  void stopPauseAndResume_changeStateAndSignalTheProcess() throws Exception {
    start(SLEEPERS, b -> b);
    ProcessInfo master = cluster.process(Role.MASTER, 0);

    cluster.pauseProcess(Role.MASTER, 0);
    assertThat(cluster.process(Role.MASTER, 0).state()).isEqualTo(ProcessState.PAUSED);
    await().atMost(WAIT).until(() -> procState(master.pid()).equals("T"));

    cluster.resume(Role.MASTER, 0);
    assertThat(cluster.process(Role.MASTER, 0).state()).isEqualTo(ProcessState.RUNNING);
    await().atMost(WAIT).until(() -> !procState(master.pid()).equals("T"));

    ProcessInfo pserver = cluster.process(Role.PSERVER, 0);
    int code = cluster.stop(Role.PSERVER, 0);

    assertThat(code).isEqualTo(143); // 128 + SIGTERM
    assertThat(alive(pserver.pid())).isFalse();
    assertThat(cluster.process(Role.PSERVER, 0).state()).isEqualTo(ProcessState.STOPPED);
    assertThat(cluster.process(Role.PSERVER, 0).restarts()).isZero();
  }

  @Test
  void trainerExitingWithZero_isRestartedWhileTheJobRunsAndFinishedAfterIt() throws Exception {
    start(SLEEPERS, b -> b);
    long first = cluster.process(Role.TRAINER, 0).pid();

    Files.createFile(runDir.resolve("done-0")); // no master answers: the job has not ended
    await()
        .atMost(WAIT)
        .until(
            () -> {
              ProcessInfo t = cluster.process(Role.TRAINER, 0);
              return t.restarts() == 1 && t.state() == ProcessState.RUNNING && t.pid() != first;
            });

    cluster.markJobEnded();
    Files.createFile(runDir.resolve("done-0"));

    await()
        .atMost(WAIT)
        .until(() -> cluster.process(Role.TRAINER, 0).state() == ProcessState.FINISHED);
    assertThat(cluster.process(Role.TRAINER, 0).restarts()).isEqualTo(1);
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> assertThat(events).anyMatch(e -> e.type() == ClusterEvent.Type.FINISHED));
  }

  private static final ServiceCommand CRASHING_TRAINER =
      ctx -> ctx.role() == Role.TRAINER ? List.of("sh", "-c", "exit 3") : List.of("sleep", "600");

  @Test
  void processThatKeepsDying_isMarkedFailedAfterTheRestartBudget() throws Exception {
    // trainers run until the file 'crash' appears; from then on every incarnation exits with 3
    ServiceCommand crashOnDemand =
        ctx ->
            ctx.role() == Role.TRAINER
                ? List.of("sh", "-c", "while [ ! -e crash ]; do sleep 0.05; done; exit 3")
                : List.of("sleep", "600");
    start(crashOnDemand, b -> b.maxRestarts(2));

    Files.createFile(runDir.resolve("crash"));

    await()
        .atMost(WAIT)
        .until(() -> cluster.process(Role.TRAINER, 0).state() == ProcessState.FAILED);
    assertThat(cluster.process(Role.TRAINER, 0).restarts()).isEqualTo(2);
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(events)
                    .extracting(ClusterEvent::message)
                    .anyMatch(
                        m ->
                            m.contains("trainer-0")
                                && m.contains("exited with code 3; not restarting after 2")));
    assertThat(cluster.process(Role.MASTER, 0).state()).isEqualTo(ProcessState.RUNNING);
  }

  @Test
  void trainerFailingTheSameWayAfterARestart_isNotRestartedAgain_andTheErrorIsShown()
      throws Exception {
    // every incarnation logs the same error, as a trainer handed a file that is not RecordIO does
    ServiceCommand sameError =
        ctx ->
            ctx.role() == Role.TRAINER
                ? List.of(
                    "sh",
                    "-c",
                    "while [ ! -e go ]; do sleep 0.05; done; echo 'ERROR --- TrainingSession :"
                        + " training failed: dataset file /d/t.dataset.pb is not a RecordIO file';"
                        + " exit 1")
                : List.of("sleep", "600");
    start(sameError, b -> b.maxRestarts(5));

    Files.createFile(runDir.resolve("go"));

    await()
        .atMost(WAIT)
        .until(() -> cluster.process(Role.TRAINER, 0).state() == ProcessState.FAILED);
    assertThat(cluster.process(Role.TRAINER, 0).restarts()).isEqualTo(1);
    // the supervisor marks the process FAILED, then emits the event: wait for it too
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(events)
                    .extracting(ClusterEvent::message)
                    .anyMatch(
                        m ->
                            m.contains("trainer-0")
                                && m.contains(
                                    "exited with code 1 and the same error as before its restart;"
                                        + " not restarting: dataset file /d/t.dataset.pb is not a"
                                        + " RecordIO file")));
  }

  @Test
  void trainerFailingDifferentlyEachTime_isRestartedUpToTheBudget() throws Exception {
    // the error names the process id: never the same twice
    ServiceCommand newError =
        ctx ->
            ctx.role() == Role.TRAINER
                ? List.of(
                    "sh",
                    "-c",
                    "while [ ! -e go ]; do sleep 0.05; done; echo \"training failed: pid $$\"; exit 1")
                : List.of("sleep", "600");
    start(newError, b -> b.maxRestarts(2));

    Files.createFile(runDir.resolve("go"));

    await()
        .atMost(WAIT)
        .until(() -> cluster.process(Role.TRAINER, 0).state() == ProcessState.FAILED);
    assertThat(cluster.process(Role.TRAINER, 0).restarts()).isEqualTo(2);
  }

  @Test
  void processRefusingItsConfiguration_isNotRestarted_andTheReasonIsReported() throws Exception {
    // the trainer prints Spring Boot's failure report of a bad setting and exits with 1
    ServiceCommand badSetting =
        ctx ->
            ctx.role() == Role.TRAINER
                ? List.of(
                    "sh",
                    "-c",
                    "while [ ! -e go ]; do sleep 0.05; done; printf '%s\\n' '***************************'"
                        + " 'APPLICATION FAILED TO START' '' 'Description:' ''"
                        + " \"Invalid configuration: paramserver.trainer.optimizer 'x' is not valid\""
                        + " '' 'Action:'; exit 1")
                : List.of("sleep", "600");
    start(badSetting, b -> b.maxRestarts(5));

    Files.createFile(runDir.resolve("go"));

    await()
        .atMost(WAIT)
        .until(() -> cluster.process(Role.TRAINER, 0).state() == ProcessState.FAILED);
    assertThat(cluster.process(Role.TRAINER, 0).restarts()).isZero();
    // the supervisor marks the process FAILED, then emits the event: wait for it too
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(events)
                    .extracting(ClusterEvent::message)
                    .anyMatch(
                        m ->
                            m.contains(
                                "refused to start: paramserver.trainer.optimizer 'x' is not valid"
                                    + " (see ")));
  }

  @Test
  void startWithAProcessThatKeepsDying_failsAndLeavesNothingRunning() {
    ClusterSpec.Builder b =
        ClusterSpec.builder(runDir)
            .masters(1)
            .pservers(1)
            .trainers(1)
            .maxRestarts(1)
            .restartBackoff(Duration.ofMillis(50))
            .stopTimeout(Duration.ofSeconds(5))
            .startTimeout(WAIT)
            .command(CRASHING_TRAINER, true); // sleepers never listen: only the crash ends start
    cluster = new LocalCluster(b.build());

    assertThatThrownBy(cluster::start)
        .isInstanceOf(LocalClusterException.class)
        .hasMessageContaining("trainer-0 failed to start");

    assertThat(cluster.processes()).allMatch(p -> p.pid() > 0 && !alive(p.pid()));
    assertThat(cluster.etcdPid()).isEqualTo(-1);
  }

  @Test
  void stopAndStartEtcd_keepEndpointAndData() throws Exception {
    start(SLEEPERS, b -> b);
    String endpoint = cluster.etcdEndpoint();
    long pid = cluster.etcdPid();
    etcdPut(endpoint, "/paramserver/t/probe", "kept");

    cluster.stopEtcd();

    assertThat(cluster.etcdPid()).isEqualTo(-1);
    assertThat(alive(pid)).isFalse();
    assertThat(clusterJson().path("etcd").path("pid").isNull()).isTrue();

    cluster.startEtcd();

    assertThat(cluster.etcdEndpoint()).isEqualTo(endpoint);
    assertThat(cluster.etcdPid()).isPositive().isNotEqualTo(pid);
    assertThat(etcdGet(endpoint, "/paramserver/t/probe")).isEqualTo("kept");
  }

  @Test
  void newClusterInAUsedRunFolder_startsFromAnEmptyEtcd() throws Exception {
    start(SLEEPERS, b -> b);
    etcdPut(cluster.etcdEndpoint(), "/paramserver/t/old", "state of the first run");
    cluster.close();

    start(SLEEPERS, b -> b);

    assertThat(etcdGet(cluster.etcdEndpoint(), "/paramserver/t/old")).isEmpty();
  }

  @Test
  void close_stopsEveryProcessAndEtcdAndRecordsIt() throws Exception {
    start(SLEEPERS, b -> b);
    cluster.pauseProcess(Role.PSERVER, 0); // a paused process must still be stopped
    List<Long> pids = new ArrayList<>();
    cluster.processes().forEach(p -> pids.add(p.pid()));
    pids.add(cluster.etcdPid());

    cluster.close();
    cluster.close(); // idempotent

    assertThat(pids).noneMatch(LocalClusterSupervisionTest::alive);
    assertThat(cluster.processes()).allMatch(p -> p.state() == ProcessState.STOPPED);
    JsonNode json = clusterJson();
    json.path("processes")
        .forEach(p -> assertThat(p.path("state").asString()).isEqualTo("STOPPED"));
    assertThat(json.path("etcd").path("pid").isNull()).isTrue();
    assertThatThrownBy(() -> cluster.restart(Role.MASTER, 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  private JsonNode clusterJson() throws IOException {
    return JSON.readTree(cluster.clusterFile().toFile());
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  /** The state letter of /proc/PID/stat (R, S, T, Z...), or "gone". */
  private static String procState(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    } catch (IOException e) {
      return "gone";
    }
  }

  private static String httpGet(String url) throws Exception {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static String httpPost(String url, String body) throws Exception {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(5))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Through etcd's own v3 JSON gateway, so the test needs no client library. */
  private static void etcdPut(String endpoint, String key, String value) throws Exception {
    httpPost(
        endpoint + "/v3/kv/put", "{\"key\":\"" + b64(key) + "\",\"value\":\"" + b64(value) + "\"}");
  }

  private static String etcdGet(String endpoint, String key) throws Exception {
    JsonNode range =
        JSON.readTree(httpPost(endpoint + "/v3/kv/range", "{\"key\":\"" + b64(key) + "\"}"));
    String value = range.path("kvs").path(0).path("value").asString();
    return new String(Base64.getDecoder().decode(value), StandardCharsets.UTF_8);
  }
}
