package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What makes the compose demo run to an end without a registry (scripts/compose-smoke.sh runs it
 * for real): the one-shot evaluation after the trainers, Grafana behind a profile, replaceable etcd
 * and Prometheus images, and a Dockerfile BuildKit builds offline.
 */
@SuppressWarnings("unchecked")
class ComposeRunTest {
  private final Map<String, Object> compose = RepoFiles.yaml("docker-compose.yml");

  private Map<String, Object> service(String name) {
    Map<String, Object> s = ((Map<String, Map<String, Object>>) compose.get("services")).get(name);
    assertThat(s).as("compose service " + name).isNotNull();
    return s;
  }

  @Test
  void evaluate_runsOnceBothTrainersExitedZero_onTheModelTheyWrite() {
    Map<String, Object> evaluate = service("evaluate");
    Map<String, Map<String, String>> deps =
        (Map<String, Map<String, String>>) evaluate.get("depends_on");
    assertThat(deps.keySet()).containsExactlyInAnyOrder("trainer-1", "trainer-2");
    deps.values()
        .forEach(d -> assertThat(d.get("condition")).isEqualTo("service_completed_successfully"));
    assertThat((List<String>) evaluate.get("command"))
        .startsWith("evaluate")
        .contains("--result-line", "--model=/var/lib/paramserver/model/model.pb");
    assertThat(evaluate.get("restart")).isEqualTo("no");
    String modelOutput =
        String.valueOf(
            ((Map<String, Object>) service("trainer-1").get("environment"))
                .get("PARAMSERVER_TRAINER_MODEL_OUTPUT"));
    assertThat(modelOutput).isEqualTo("/var/lib/paramserver/model/model.pb");
    assertThat((List<String>) evaluate.get("volumes"))
        .contains("model:/var/lib/paramserver/model:ro");
    assertThat((List<String>) service("trainer-1").get("volumes"))
        .contains("model:/var/lib/paramserver/model");
  }

  @Test
  void grafana_isBehindAProfile_everythingElseStartsByDefault() {
    assertThat((List<String>) service("grafana").get("profiles")).containsExactly("grafana");
    ((Map<String, Map<String, Object>>) compose.get("services"))
        .forEach(
            (name, s) -> {
              if (!"grafana".equals(name)) {
                assertThat(s.get("profiles")).as(name).isNull();
              }
            });
  }

  @Test
  void etcdAndPrometheusImages_areReplaceable_andCalledThroughThePath() {
    Map<String, Object> etcd = service("etcd");
    // the raw file (no interpolation here): the variable, with the public image as its default
    assertThat(etcd.get("image"))
        .isEqualTo("${PARAMSERVER_ETCD_IMAGE:-quay.io/coreos/etcd:v3.5.17}");
    assertThat((List<String>) etcd.get("command")).first().isEqualTo("etcd");
    String raw = RepoFiles.read("docker-compose.yml");
    assertThat(raw)
        .contains("image: ${PARAMSERVER_ETCD_IMAGE:-quay.io/coreos/etcd:v3.5.17}")
        .contains("image: ${PARAMSERVER_PROMETHEUS_IMAGE:-prom/prometheus:v2.55.1}")
        .doesNotContain("/usr/local/bin/etcd");
  }

  @Test
  void dockerfile_buildsOfflineWithTheBuiltInFrontend_fromMavenOrPrebuiltJars() {
    String dockerfile = RepoFiles.read("docker/Dockerfile");
    assertThat(dockerfile.lines().filter(l -> l.startsWith("# syntax="))).isEmpty();
    assertThat(dockerfile)
        .contains("AS jars-maven")
        .contains("AS jars-prebuilt")
        .contains("FROM jars-${JARS} AS extract")
        .contains("ARG JARS=maven");
    String ignore = RepoFiles.read("docker/Dockerfile.dockerignore");
    for (String module :
        List.of("master-service", "pserver-service", "trainer-agent", "serving-service", "psctl")) {
      assertThat(dockerfile).contains("COPY " + module + "/target/" + module + "-*-exec.jar");
      assertThat(ignore).contains("!" + module + "/target/" + module + "-*-exec.jar");
    }
  }

  @Test
  void localBaseImages_trustTheHostsExtraCaCertificates() {
    String base = RepoFiles.read("docker/local-base/Dockerfile");
    assertThat(base)
        .contains("COPY ca-certificates/ /usr/local/share/ca-certificates/")
        .contains("update-ca-certificates");
    for (String target : List.of("jdk", "jre", "etcd", "prometheus")) {
      assertThat(base).contains("FROM ca AS " + target);
    }
    assertThat(RepoFiles.read("scripts/build-images.sh"))
        .contains("/usr/local/share/ca-certificates")
        .contains("debootstrap --variant=minbase bookworm")
        .contains("import");
  }
}
