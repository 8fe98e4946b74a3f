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
          .as(j.get("name") + " restarts its pods in place")
          .isEqualTo("OnFailure");
      assertThat((Integer) at(j, "template.spec.backoffLimit")).isPositive();
    }
  }

  @Test
  void pserverIndex_isTheJobCompletionIndex() {
    Map<String, Object> pserver =
        list(JOBSET, "spec.replicatedJobs").stream()
            .filter(j -> "pserver".equals(j.get("name")))
            .findFirst()
            .orElseThrow();
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
