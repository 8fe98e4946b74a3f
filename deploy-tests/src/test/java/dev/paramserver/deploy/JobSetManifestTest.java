package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * deploy/jobset: the JobSet ends with the trainers, restarts pods rather than the whole set, and
 * the Kubeflow Trainer runtime runs the same JobSet with the trainers as its "node" job. (The
 * schema validation is scripts/validate-deploy.sh's.)
 */
@SuppressWarnings("unchecked")
class JobSetManifestTest {
  @SuppressWarnings("unchecked")
  private static Map<String, Object> only(String file, String kind) {
    List<Map<String, Object>> found = new ArrayList<>();
    for (Object doc : new Yaml().loadAll(RepoFiles.read(file))) {
      if (doc instanceof Map<?, ?> m && kind.equals(m.get("kind"))) {
        found.add((Map<String, Object>) m);
      }
    }
    assertThat(found).as(kind + " in " + file).hasSize(1);
    return found.get(0);
  }

  private static final Map<String, Object> JOBSET =
      only("deploy/jobset/paramserver-jobset.yaml", "JobSet");

  @Test
  void succeedsWhenTheTrainersFinish_andRestartsPodsNotTheSet() {
    assertThat(at(JOBSET, "spec.successPolicy.operator")).isEqualTo("All");
    assertThat((List<Object>) at(JOBSET, "spec.successPolicy.targetReplicatedJobs"))
        .containsExactly("trainer");
    assertThat(at(JOBSET, "spec.failurePolicy.maxRestarts")).isEqualTo(0);
    List<Map<String, Object>> jobs = list(JOBSET, "spec.replicatedJobs");
    assertThat(jobs)
        .extracting(j -> j.get("name"))
        .containsExactly("etcd", "master", "pserver", "trainer");
    for (Map<String, Object> j : jobs) {
      assertThat(at(j, "template.spec.template.spec.restartPolicy"))
          .as(j.get("name") + " restarts its pods in place (trainers: a new pod)")
          .isEqualTo("trainer".equals(j.get("name")) ? "Never" : "OnFailure");
      assertThat((Integer) at(j, "template.spec.backoffLimit")).isPositive();
    }
  }

  @Test
  void stoppedOrFailedJob_failsTheTrainersJobAtOnce_andSoTheSet()
      throws ReflectiveOperationException {
    Map<String, Object> trainer = replicatedJob(JOBSET, "trainer");
    List<Map<String, Object>> rules = list(trainer, "template.spec.podFailurePolicy.rules");
    assertThat(rules.get(0).get("action")).isEqualTo("FailJob");
    assertThat(at(rules.get(0), "onExitCodes.containerName")).isEqualTo("trainer");
    assertThat((List<Object>) at(rules.get(0), "onExitCodes.values"))
        .containsExactly(HelmJobEndTest.jobFailedExitCode());
    assertThat(rules.get(1).get("action")).isEqualTo("Ignore");
  }

  @Test
  void eachJobSet_isItsOwnJob_withItsOwnModelPath() {
    Map<String, Object> config = only("deploy/jobset/paramserver-jobset.yaml", "ConfigMap");
    Map<String, Object> data = (Map<String, Object>) config.get("data");
    for (String role : List.of("master", "pserver", "trainer")) {
      assertThat((String) data.get(role + ".properties"))
          .as(role)
          .contains("paramserver.job=${JOBSET_NAME}\n");
    }
    assertThat((String) data.get("trainer.properties"))
        .contains("paramserver.trainer.model-output=/var/lib/paramserver/model/${JOBSET_NAME}/");
    // JOBSET_NAME is set in every paramserver container, from the JobSet's pod label
    for (String job : List.of("master", "pserver", "trainer")) {
      assertThat(
              list(replicatedJob(JOBSET, job), "template.spec.template.spec.containers")
                  .get(0)
                  .get("env"))
          .asString()
          .contains("name=JOBSET_NAME")
          .contains("jobset.sigs.k8s.io/jobset-name");
    }
  }

  @Test
  void trainingRuntime_namesItsTrainerContainerNode_andCarriesTheFrameworkLabel() {
    Map<String, Object> runtime =
        only("deploy/jobset/paramserver-runtime.yaml", "ClusterTrainingRuntime");
    assertThat((Map<String, Object>) at(runtime, "metadata.labels"))
        .containsEntry("trainer.kubeflow.org/framework", "paramserver");
    Map<String, Object> node =
        replicatedJob((Map<String, Object>) at(runtime, "spec.template"), "node");
    // Kubeflow copies a TrainJob's image, env and resources only into containers named "node"
    assertThat(list(node, "template.spec.template.spec.containers"))
        .extracting(c -> c.get("name"))
        .containsExactly("node");
  }

  private static Map<String, Object> replicatedJob(Map<String, Object> jobSet, String name) {
    return list(jobSet, "spec.replicatedJobs").stream()
        .filter(j -> name.equals(j.get("name")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no replicated job " + name));
  }

  /** The masters' gRPC addresses in the runtime's node: both master pods of the JobSet. */
  private static final String MASTERS =
      "$(JOBSET_NAME)-master-0-0.$(JOBSET_NAME):9090,$(JOBSET_NAME)-master-0-1.$(JOBSET_NAME):9090";

  @Test
  @SuppressWarnings("unchecked")
  void trainingRuntime_nodeCanBeAPyTorchImage_noJavaProbes_andTheMastersInItsEnvironment() {
    Map<String, Object> runtime =
        only("deploy/jobset/paramserver-runtime.yaml", "ClusterTrainingRuntime");
    Map<String, Object> node =
        list(
                replicatedJob((Map<String, Object>) at(runtime, "spec.template"), "node"),
                "template.spec.template.spec.containers")
            .get(0);
    assertThat(node).doesNotContainKeys("startupProbe", "livenessProbe", "readinessProbe");
    Map<String, Object> masters = replicatedJob(JOBSET, "master");
    assertThat(at(masters, "template.spec.completions")).isEqualTo(2);
    assertThat((List<Map<String, Object>>) node.get("env"))
        .extracting(e -> e.get("name"))
        .contains("PARAMSERVER_MASTERS", "PARAMSERVER_ADMIN_TOKEN", "PARAMSERVER_ADVERTISE_HOST");
    assertThat((List<Map<String, Object>>) node.get("env"))
        .filteredOn(e -> "PARAMSERVER_MASTERS".equals(e.get("name")))
        .extracting(e -> e.get("value"))
        .containsExactly(MASTERS);
  }

  @Test
  void pserverIndex_isTheJobCompletionIndex() {
    Map<String, Object> pserver = replicatedJob(JOBSET, "pserver");
    assertThat(list(pserver, "template.spec.template.spec.containers").get(0).get("env"))
        .asString()
        .contains("PARAMSERVER_PSERVER_INDEX")
        .contains("batch.kubernetes.io/job-completion-index");
  }

  @Test
  @SuppressWarnings("unchecked")
  void trainingRuntime_runsTheSameJobSet_withTheTrainersAsItsNodes() {
    Map<String, Object> runtime =
        only("deploy/jobset/paramserver-runtime.yaml", "ClusterTrainingRuntime");
    Map<String, Object> spec = (Map<String, Object>) at(runtime, "spec.template.spec");
    Map<String, Object> expected = new Yaml().load(new Yaml().dump(JOBSET.get("spec")));
    expected.remove("ttlSecondsAfterFinished");
    for (Map<String, Object> j : (List<Map<String, Object>>) expected.get("replicatedJobs")) {
      if ("trainer".equals(j.get("name"))) {
        j.put("name", "node");
        Map<String, Object> jobSpec =
            (Map<String, Object>) ((Map<String, Object>) j.get("template")).get("spec");
        for (Map<String, Object> c : list(jobSpec, "template.spec.containers")) {
          c.put("name", "node");
          // the node may be a PyTorch image: no probes of the Java trainer's actuator, and the
          // masters' addresses for paramserver.Client
          c.remove("startupProbe");
          c.remove("livenessProbe");
          List<Object> env = new ArrayList<>((List<Object>) c.get("env"));
          env.add(Map.of("name", "PARAMSERVER_MASTERS", "value", MASTERS));
          c.put("env", env);
        }
        for (Map<String, Object> r : list(jobSpec, "podFailurePolicy.rules")) {
          if (r.get("onExitCodes") instanceof Map<?, ?> codes) {
            ((Map<String, Object>) codes).put("containerName", "node");
          }
        }
        ((Map<String, Object>) j.get("template"))
            .put(
                "metadata",
                Map.of("labels", Map.of("trainer.kubeflow.org/trainjob-ancestor-step", "trainer")));
      }
    }
    ((Map<String, Object>) expected.get("successPolicy"))
        .put("targetReplicatedJobs", List.of("node"));
    assertThat(spec).isEqualTo(expected);
  }
}
