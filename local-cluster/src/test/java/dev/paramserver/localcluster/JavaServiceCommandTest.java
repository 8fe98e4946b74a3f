package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JavaServiceCommandTest {
  @TempDir Path dir;

  private ClusterSpec spec() throws Exception {
    Path jar = Files.createFile(dir.resolve("pserver-service-0.1.0-SNAPSHOT-exec.jar"));
    return ClusterSpec.builder(dir.resolve("run"))
        .job("j")
        .pservers(3)
        .adminToken("0123456789abcdef0123456789abcdef")
        .jar(Role.PSERVER, jar)
        .jar(Role.TRAINER, jar)
        .javaBinary("/opt/java")
        .property(Role.PSERVER, "paramserver.pserver.desired", "7")
        .property(Role.PSERVER, "--x.y", "z")
        .build();
  }

  @Test
  void build_pserver_hasPortsSharedPropertiesAndRoleExtrasOnce() throws Exception {
    ClusterSpec spec = spec();
    List<String> cmd =
        ServiceCommand.javaServices()
            .build(
                new ServiceCommand.LaunchContext(
                    spec, Role.PSERVER, 1, 8080, 9090, "http://127.0.0.1:2379"));

    assertThat(cmd.get(0)).isEqualTo("/opt/java");
    assertThat(cmd).containsSubsequence(ClusterSpec.defaultJvmOptions(Role.PSERVER));
    assertThat(cmd)
        .containsSubsequence("-jar", spec.jar(Role.PSERVER).toString())
        .contains(
            "--server.address=127.0.0.1",
            "--server.port=8080",
            "--spring.grpc.server.address=127.0.0.1",
            "--spring.grpc.server.port=9090",
            "--paramserver.job=j",
            "--paramserver.etcd.endpoints=http://127.0.0.1:2379",
            "--paramserver.admin.token=0123456789abcdef0123456789abcdef",
            "--paramserver.advertise-host=127.0.0.1",
            "--paramserver.pserver.checkpoint-dir=" + dir.resolve("run/checkpoints/pserver-1"),
            "--x.y=z");
    // the extra property replaced the built-in one instead of repeating it
    assertThat(cmd.stream().filter(a -> a.startsWith("--paramserver.pserver.desired=")))
        .containsExactly("--paramserver.pserver.desired=7");
  }

  @Test
  void build_besideServingReplicas_startsTrainersAndPserversNiced_replicasNot() throws Exception {
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/nice")), "no /usr/bin/nice");
    Path jar = Files.createFile(dir.resolve("any-exec.jar"));
    ClusterSpec.Builder b = ClusterSpec.builder(dir.resolve("run3")).job("j").serving(1);
    for (Role role : Role.values()) {
      b.jar(role, jar);
    }
    ClusterSpec spec = b.javaBinary("/opt/java").classDataSharing(false).build();
    for (Role role : List.of(Role.TRAINER, Role.PSERVER)) {
      List<String> cmd =
          ServiceCommand.javaServices()
              .build(new ServiceCommand.LaunchContext(spec, role, 0, 1, 2, "http://e"));
      List<String> prefix = JavaServiceCommand.niced(10);
      assertThat(prefix).endsWith("/usr/bin/nice", "-n", "10");
      assertThat(cmd.subList(0, prefix.size() + 1))
          .containsExactlyElementsOf(concat(prefix, "/opt/java"));
    }
    for (Role role : List.of(Role.SERVING, Role.MASTER)) {
      List<String> cmd =
          ServiceCommand.javaServices()
              .build(new ServiceCommand.LaunchContext(spec, role, 0, 1, 2, "http://e"));
      assertThat(cmd.get(0)).isEqualTo("/opt/java");
    }
    assertThatThrownBy(() -> ClusterSpec.builder(dir).trainingNiceness(20))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("0 to 19");
  }

  /**
   * A niced service started as the cluster starts it (in a session of its own) runs at that nice
   * value, and so does its session's autogroup, by which the kernel shares the CPU between sessions
   * first: without it the nice value of a process in its own session changes nothing.
   */
  @Test
  void niced_startsTheProcessAndItsSessionsAutogroupAtTheNiceValue() throws Exception {
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/nice")), "no /usr/bin/nice");
    List<String> cmd =
        concat(
            JavaServiceCommand.niced(7),
            "/bin/sh",
            "-c",
            "cat /proc/self/autogroup 2>/dev/null; echo pid $$ nice $(cut -d' ' -f19 /proc/$$/stat)");
    Process p =
        new ProcessBuilder(dev.paramserver.launcher.Launcher.wrap(cmd))
            .redirectErrorStream(true)
            .start();
    assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(out).as(out).contains("pid " + p.pid() + " nice 7");
    if (Files.isRegularFile(Path.of("/proc/self/autogroup"))) {
      assertThat(out).as(out).containsPattern("(?m)^/autogroup-\\d+ nice 7$");
    }
    assertThat(JavaServiceCommand.niced(0)).isEmpty();
  }

  private static List<String> concat(List<String> head, String... tail) {
    List<String> all = new ArrayList<>(head);
    all.addAll(List.of(tail));
    return all;
  }

  @Test
  void build_trainer_hasIdAndNoGrpcPort() throws Exception {
    List<String> cmd =
        ServiceCommand.javaServices()
            .build(new ServiceCommand.LaunchContext(spec(), Role.TRAINER, 0, 8081, 0, "http://e"));

    assertThat(cmd).contains("--paramserver.trainer.id=trainer-0", "--server.port=8081");
    assertThat(cmd).noneMatch(a -> a.contains("grpc.server"));
  }

  @Test
  void trainersThroughMaster_getTheMastersAndNoEtcdSettings() throws Exception {
    ClusterSpec spec =
        ClusterSpec.builder(dir.resolve("run2")).job("j").trainersThroughMaster(true).build();
    Map<String, String> trainer =
        JavaServiceCommand.properties(
            new ServiceCommand.LaunchContext(
                spec, Role.TRAINER, 0, 1, 0, "http://e", List.of("127.0.0.1:1", "127.0.0.1:2")));
    assertThat(trainer)
        .containsEntry("paramserver.trainer.coordination.mode", "master")
        .containsEntry("paramserver.trainer.coordination.masters", "127.0.0.1:1,127.0.0.1:2")
        .doesNotContainKey("paramserver.etcd.endpoints");
    Map<String, String> pserver =
        JavaServiceCommand.properties(
            new ServiceCommand.LaunchContext(
                spec, Role.PSERVER, 0, 1, 2, "http://e", List.of("127.0.0.1:1")));
    assertThat(pserver).containsEntry("paramserver.etcd.endpoints", "http://e");
  }

  @Test
  void master_tracksTheRunInTheRunFolder() throws Exception {
    assertThat(
            JavaServiceCommand.properties(
                new ServiceCommand.LaunchContext(spec(), Role.MASTER, 0, 1, 2, "http://e")))
        .containsEntry("paramserver.master.tracking.dir", dir.resolve("run").toString());
  }

  @Test
  void build_withoutJar_namesRoleAndHowToBuild() throws Exception {
    ServiceCommand.LaunchContext ctx =
        new ServiceCommand.LaunchContext(spec(), Role.MASTER, 0, 1, 2, "http://e");
    assertThatThrownBy(() -> ServiceCommand.javaServices().build(ctx))
        .hasMessageContaining("role master")
        .hasMessageContaining("mvnw");
  }

  @Test
  void defaultJvmOptions_keepC2ForComputeRolesOnly() {
    assertThat(ClusterSpec.defaultJvmOptions(Role.MASTER)).contains("-XX:TieredStopAtLevel=1");
    assertThat(ClusterSpec.defaultJvmOptions(Role.PSERVER))
        .noneMatch(o -> o.startsWith("-XX:TieredStopAtLevel"));
    assertThat(ClusterSpec.defaultJvmOptions(Role.TRAINER))
        .noneMatch(o -> o.startsWith("-XX:TieredStopAtLevel"));
  }

  @Test
  void defaultJvmOptions_serving_collectsConcurrently_othersKeepTheSerialCollector() {
    assertThat(ClusterSpec.defaultJvmOptions(Role.SERVING))
        .contains("-XX:+UseZGC")
        .doesNotContain("-XX:+UseSerialGC")
        .noneMatch(o -> o.startsWith("-Xmn"));
    assertThat(ClusterSpec.defaultJvmOptions(Role.PSERVER)).contains("-XX:+UseSerialGC");
  }

  @Test
  void defaultJvmOptions_raiseTheC1ThresholdsOfEveryRoleButThePservers_andLeaveC2s() {
    for (Role role : Role.values()) {
      List<String> options = ClusterSpec.defaultJvmOptions(role);
      assertThat(options).noneMatch(o -> o.startsWith("-XX:Tier4"));
      if (role == Role.PSERVER) {
        // its data path compiles at the JVM's own thresholds: it starts under load
        assertThat(options).noneMatch(o -> o.startsWith("-XX:Tier3"));
      } else {
        assertThat(options).containsSubsequence(ClusterSpec.START_UP_JIT_OPTIONS);
      }
    }
  }

  @Test
  void defaultJvmOptions_areAcceptedByThisJvm() throws Exception {
    // an option the JVM does not know stops every service at launch
    for (Role role : Role.values()) {
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.addAll(ClusterSpec.defaultJvmOptions(role));
      cmd.add("-version");
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(role.id() + ": " + out).isZero();
    }
  }

  @Test
  void randomToken_is32HexCharsAndDiffersPerCall() {
    String a = ClusterSpec.randomToken();
    assertThat(a).matches("[0-9a-f]{32}");
    assertThat(ClusterSpec.randomToken()).isNotEqualTo(a);
  }
}
