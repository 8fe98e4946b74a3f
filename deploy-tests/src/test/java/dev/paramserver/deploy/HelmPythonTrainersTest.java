package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.container;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Python trainers on Kubernetes (trainer.python), rendered by the real helm: a Job of the user's
 * image and command whose pods get the masters' gRPC address, the job, the S3 settings and the
 * data; zero Java trainers, in which case the job end watches the Python Job; what the chart
 * refuses.
 */
@SuppressWarnings("unchecked")
class HelmPythonTrainersTest {
  private static final String[] PYTHON_ONLY = {
    "trainer.parallelism=0",
    "trainer.completions=0",
    "trainer.python.enabled=true",
    "trainer.python.image=registry.example/ctr:1",
    "trainer.python.command={python,/app/train_ctr.py}",
    "trainer.python.args={--data,/data/train-*.recordio}",
    "trainer.python.parallelism=3",
    "trainer.python.completions=3",
    "s3.endpoint=http://minio:9000",
    "s3.pathStyle=true"
  };

  @Test
  void pythonTrainers_runTheUsersImageAndCommand_withTheMastersAddressAndTheData() {
    HelmChart.Rendered r = HelmChart.template(PYTHON_ONLY);
    Map<String, Object> job = r.named("Job", "ps-paramserver-trainer-python-");
    assertThat(at(job, "spec.parallelism")).isEqualTo(3);
    Map<String, Object> c = container(job, "trainer");
    assertThat(c.get("image")).isEqualTo("registry.example/ctr:1");
    assertThat((List<Object>) c.get("command")).containsExactly("python", "/app/train_ctr.py");
    assertThat((List<Object>) c.get("args")).containsExactly("--data", "/data/train-*.recordio");
    Map<String, Object> master = r.get("Service", "ps-paramserver-master");
    Object grpcPort =
        list(master, "spec.ports").stream()
            .filter(p -> "grpc".equals(p.get("name")))
            .findFirst()
            .orElseThrow()
            .get("port");
    assertThat(env(c))
        .containsEntry("PARAMSERVER_MASTERS", "ps-paramserver-master.paramserver.svc:" + grpcPort)
        .containsEntry("PARAMSERVER_JOB", "default")
        .containsEntry("PARAMSERVER_S3_ENDPOINT", "http://minio:9000")
        .containsEntry("PARAMSERVER_S3_PATH_STYLE", "true")
        .containsEntry("PARAMSERVER_DATA_DIR", "/data");
    // the admin token and the pod's IP: the trainer serves its progress to the console
    assertThat(list(c, "env"))
        .anySatisfy(
            e -> {
              assertThat(e.get("name")).isEqualTo("PARAMSERVER_ADMIN_TOKEN");
              assertThat(e).extractingByKey("valueFrom").asString().contains("secretKeyRef");
            })
        .anySatisfy(
            e -> {
              assertThat(e.get("name")).isEqualTo("PARAMSERVER_STATUS_HOST");
              assertThat(e).extractingByKey("valueFrom").asString().contains("status.podIP");
            });
    assertThat(list(c, "volumeMounts"))
        .anySatisfy(m -> assertThat(m.get("name")).isEqualTo("data"));
    assertThat(list(job, "spec.podFailurePolicy.rules"))
        .as("an evicted Python trainer is not a failure")
        .anySatisfy(rule -> assertThat(rule.get("action")).isEqualTo("Ignore"));
  }

  @Test
  void zeroJavaTrainers_rendersNoJavaTrainerJob_andTheJobEndWatchesThePythonJob() {
    HelmChart.Rendered r = HelmChart.template(PYTHON_ONLY);
    String pythonJob =
        (String) at(r.named("Job", "ps-paramserver-trainer-python-"), "metadata.name");
    assertThat(r.ofKind("Job"))
        .extracting(j -> (String) at(j, "metadata.name"))
        .noneMatch(n -> n.startsWith("ps-paramserver-trainer-") && !n.equals(pythonJob));
    assertThat(r.ofKind("PodDisruptionBudget"))
        .extracting(p -> (String) at(p, "metadata.name"))
        .doesNotContain("ps-paramserver-trainer");
    assertThat(r.ofKind("Service"))
        .extracting(p -> (String) at(p, "metadata.name"))
        .as("the Java trainers' metrics Service would select no pod")
        .doesNotContain("ps-paramserver-trainer");
    assertThat(r.ofKind("PersistentVolumeClaim"))
        .extracting(p -> (String) at(p, "metadata.name"))
        .doesNotContain("ps-paramserver-model");
    Map<String, Object> jobEnd = r.named("Job", "ps-paramserver-job-end-");
    assertThat(env(container(jobEnd, "job-end"))).containsEntry("TRAINER_JOB", pythonJob);
  }

  @Test
  void withJavaTrainers_theJobEndWatchesTheJavaJob_andTheDefaultsRenderNoPythonJob() {
    HelmChart.Rendered both =
        HelmChart.template(
            "trainer.python.enabled=true",
            "trainer.python.image=me/py:1",
            "trainer.python.command={python,/t.py}");
    String javaJob =
        both.ofKind("Job").stream()
            .map(j -> (String) at(j, "metadata.name"))
            .filter(n -> n.startsWith("ps-paramserver-trainer-") && !n.contains("-python-"))
            .findFirst()
            .orElseThrow();
    assertThat(env(container(both.named("Job", "ps-paramserver-job-end-"), "job-end")))
        .containsEntry("TRAINER_JOB", javaJob);
    assertThat(HelmChart.template().ofKind("Job"))
        .extracting(j -> (String) at(j, "metadata.name"))
        .noneMatch(n -> n.contains("-python-"));
  }

  @Test
  void aJobWithNoTrainer_orPythonTrainersWithoutImageOrCommand_isRefusedSayingWhatIsMissing() {
    assertThat(HelmChart.failure("trainer.parallelism=0", "trainer.completions=0"))
        .contains("the job would have no trainer");
    assertThat(HelmChart.failure("trainer.python.enabled=true"))
        .contains("trainer.python.enabled needs trainer.python.image");
    assertThat(HelmChart.failure("trainer.python.enabled=true", "trainer.python.image=me/py:1"))
        .contains("needs trainer.python.command");
  }

  private static Map<String, Object> env(Map<String, Object> container) {
    Map<String, Object> out = new java.util.LinkedHashMap<>();
    for (Map<String, Object> e : list(container, "env")) {
      out.put((String) e.get("name"), e.get("value"));
    }
    return out;
  }
}
