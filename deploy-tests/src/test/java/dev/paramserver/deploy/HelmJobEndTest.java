package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.container;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The end of a job on Kubernetes, rendered by the real helm: the trainer Job fails at once when the
 * master says the job failed, the job-end Job ends the job on failure as on success (and when the
 * trainer Job is gone), and an upgrade after the end keeps every workload at 0 replicas.
 *
 * <p>The job-end script runs for real under {@code sh}; only {@code kubectl} is a stand-in (no
 * Kubernetes API server runs here) that answers the trainer Job's state from a list and records
 * every call.
 */
@SuppressWarnings("unchecked")
class HelmJobEndTest {
  private static final HelmChart.Rendered DEFAULTS = HelmChart.template("jobEnd.periodSeconds=1");
  private static final String TRAINER_JOB =
      (String) at(DEFAULTS.named("Job", "ps-paramserver-trainer-"), "metadata.name");

  @TempDir Path dir;

  /** The trainer's exit code for "the master says the job failed", read from the trainer's code. */
  static int jobFailedExitCode() throws ReflectiveOperationException {
    Field f =
        Class.forName("dev.paramserver.trainer.training.PassRunner").getDeclaredField("JOB_FAILED");
    f.setAccessible(true);
    return f.getInt(null);
  }

  @Test
  void trainerJob_failsAtOnceWhenTheMasterSaysTheJobFailed_andIgnoresEvictions()
      throws ReflectiveOperationException {
    Map<String, Object> job = DEFAULTS.named("Job", "ps-paramserver-trainer-");
    assertThat(at(job, "spec.template.spec.restartPolicy"))
        .as("podFailurePolicy needs restartPolicy Never")
        .isEqualTo("Never");
    List<Map<String, Object>> rules = list(job, "spec.podFailurePolicy.rules");
    assertThat(rules.get(0).get("action")).isEqualTo("FailJob");
    assertThat(at(rules.get(0), "onExitCodes.containerName")).isEqualTo("trainer");
    assertThat(container(job, "trainer")).isNotNull();
    assertThat(at(rules.get(0), "onExitCodes.operator")).isEqualTo("In");
    assertThat((List<Object>) at(rules.get(0), "onExitCodes.values"))
        .containsExactly(jobFailedExitCode());
    assertThat(rules.get(1).get("action")).isEqualTo("Ignore");
    assertThat(rules.get(1).get("onPodConditions")).asString().contains("DisruptionTarget");
  }

  @Test
  void trainerJobName_hashesOnlyTheTrainersSettings_soAPserverChangeKeepsTheRunningTrainers() {
    HelmChart.Rendered other =
        HelmChart.template(
            "jobEnd.periodSeconds=1",
            "pserver.replicas=3",
            "pserver.checkpointInterval=5m",
            "pserver.extraProperties.reject-non-finite=false",
            "master.passes=5");
    assertThat(at(other.named("Job", "ps-paramserver-trainer-"), "metadata.name"))
        .isEqualTo(TRAINER_JOB);
    String checksum = "spec.template.metadata.annotations";
    assertThat(at(other.get("StatefulSet", "ps-paramserver-pserver"), checksum))
        .as("the pservers do restart")
        .isNotEqualTo(at(DEFAULTS.get("StatefulSet", "ps-paramserver-pserver"), checksum));
    assertThat(
            at(
                HelmChart.template("jobEnd.periodSeconds=1", "trainer.batchSize=32")
                    .named("Job", "ps-paramserver-trainer-"),
                "metadata.name"))
        .isNotEqualTo(TRAINER_JOB);
  }

  @Test
  void jobEndScript_readsTheJobWithKubectl_notSed_andHasTheRightsItUses() {
    String script = script(DEFAULTS);
    assertThat(script).doesNotContain("sed ").doesNotContain("curl ").contains("kubectl get job");
    Map<String, Object> role = DEFAULTS.get("Role", "ps-paramserver");
    assertThat(list(role, "rules"))
        .anySatisfy(
            r -> {
              assertThat((List<Object>) r.get("resources")).containsExactly("configmaps");
              assertThat((List<Object>) r.get("resourceNames"))
                  .containsExactly("ps-paramserver-config");
              assertThat((List<Object>) r.get("verbs")).contains("patch");
            })
        .anySatisfy(
            r -> {
              assertThat((List<Object>) r.get("resources")).contains("statefulsets");
              assertThat((List<Object>) r.get("verbs")).contains("get", "watch");
            })
        .anySatisfy(
            r ->
                assertThat((List<Object>) r.get("resources"))
                    .contains("deployments/scale", "statefulsets/scale"));
  }

  @Test
  void failedTrainerJob_endsTheJob_marksTheOutcome_andScalesPserversBeforeEtcd() throws Exception {
    List<String> calls =
        runJobEnd(List.of(TRAINER_JOB, TRAINER_JOB, TRAINER_JOB + " FailureTarget Failed"), 600);
    assertThat(calls)
        .containsSubsequence(
            "annotate configmap ps-paramserver-config paramserver.dev/job-end=failed --overwrite",
            "scale deployment/ps-paramserver-master statefulset/ps-paramserver-pserver"
                + " --replicas=0",
            "wait --for=jsonpath={.status.replicas}=0 statefulset/ps-paramserver-pserver"
                + " --timeout=120s",
            "scale statefulset/ps-paramserver-etcd --replicas=0");
  }

  @Test
  void completedTrainerJob_endsTheJob_asSucceeded() throws Exception {
    List<String> calls = runJobEnd(List.of(TRAINER_JOB + " SuccessCriteriaMet Complete"), 600);
    assertThat(calls)
        .contains(
            "annotate configmap ps-paramserver-config paramserver.dev/job-end=succeeded"
                + " --overwrite");
  }

  @Test
  void trainerJobRemovedByItsTtl_endsTheJob_insteadOfSpinningOnA404() throws Exception {
    // seen running, then gone (ttlSecondsAfterFinished removed it); an API error in between
    List<String> calls = runJobEnd(List.of(TRAINER_JOB, "<error>", "<gone>"), 600);
    assertThat(calls)
        .contains(
            "annotate configmap ps-paramserver-config paramserver.dev/job-end=removed --overwrite");
    // never seen at all: given up after jobEnd.missingAfterSeconds
    List<String> never = runJobEnd(List.of("<gone>"), 2);
    assertThat(never)
        .contains(
            "annotate configmap ps-paramserver-config paramserver.dev/job-end=missing --overwrite");
  }

  @Test
  void upgradeAfterTheEnd_keepsEveryWorkloadAtZero_andStartsNoJob() {
    HelmChart.Rendered ended = HelmChart.template("jobEnd.ended=succeeded");
    assertThat(at(ended.get("Deployment", "ps-paramserver-master"), "spec.replicas")).isEqualTo(0);
    assertThat(at(ended.get("StatefulSet", "ps-paramserver-pserver"), "spec.replicas"))
        .isEqualTo(0);
    assertThat(at(ended.get("StatefulSet", "ps-paramserver-etcd"), "spec.replicas")).isEqualTo(0);
    assertThat(ended.ofKind("Job")).as("no trainer or job-end Job after the end").isEmpty();
    assertThat(ended.get("PersistentVolumeClaim", "ps-paramserver-model")).isNotNull();
    // while the job runs: the values' replicas, and both Jobs
    assertThat(at(DEFAULTS.get("Deployment", "ps-paramserver-master"), "spec.replicas"))
        .isEqualTo(2);
    assertThat(DEFAULTS.ofKind("Job")).hasSize(2);
    // the chart reads back the very annotation the job end writes
    assertThat(RepoFiles.read("helm/paramserver/templates/_helpers.tpl"))
        .contains("index $cm.metadata.annotations \"paramserver.dev/job-end\"");
    assertThat(script(DEFAULTS)).contains("\"paramserver.dev/job-end=$outcome\"");
    assertThat(HelmChart.failure("jobEnd.ended=maybe")).contains("jobEnd");
  }

  private static String script(HelmChart.Rendered r) {
    Map<String, Object> end = r.named("Job", "ps-paramserver-job-end-");
    return String.join("\n", (List<String>) container(end, "job-end").get("args"));
  }

  /**
   * Runs the rendered job-end script with its rendered environment, against a kubectl stand-in
   * whose {@code get} answers the given lines in turn (the last repeats; {@code <gone>}: the Job
   * does not exist; {@code <error>}: the API call fails), and returns the kubectl calls made.
   */
  private List<String> runJobEnd(List<String> answers, int missingAfterSeconds)
      throws IOException, InterruptedException {
    Map<String, Object> c = container(DEFAULTS.named("Job", "ps-paramserver-job-end-"), "job-end");
    Path bin = Files.createDirectories(dir.resolve("bin-" + System.nanoTime()));
    Path log = bin.resolve("calls.log");
    Files.write(bin.resolve("answers"), answers);
    Path kubectl = bin.resolve("kubectl");
    Files.writeString(
        kubectl,
        """
        #!/bin/sh
        dir=$(dirname "$0")
        echo "$*" >>"$dir/calls.log"
        [ "$1" = get ] || exit 0
        n=$(($(cat "$dir/n" 2>/dev/null || echo 0) + 1)); echo $n >"$dir/n"
        line=$(sed -n "${n}p" "$dir/answers"); [ -n "$line" ] || line=$(tail -1 "$dir/answers")
        case "$line" in "<gone>") exit 0 ;; "<error>") exit 1 ;; *) printf '%s' "$line" ;; esac
        """);
    Files.setPosixFilePermissions(kubectl, PosixFilePermissions.fromString("rwxr-xr-x"));
    ProcessBuilder pb =
        new ProcessBuilder("sh", "-c", (String) ((List<Object>) c.get("args")).get(0))
            .redirectErrorStream(true)
            .redirectOutput(bin.resolve("out.log").toFile());
    for (Map<String, Object> e : (List<Map<String, Object>>) c.get("env")) {
      pb.environment().put((String) e.get("name"), String.valueOf(e.get("value")));
    }
    pb.environment().put("MISSING_AFTER", String.valueOf(missingAfterSeconds));
    pb.environment().put("HOME", dir.toString());
    pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
    Process p = pb.start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(
          "the job-end script did not end within 60 s: " + Files.readString(log));
    }
    String out = Files.readString(bin.resolve("out.log"), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
    return Files.readAllLines(log);
  }
}
