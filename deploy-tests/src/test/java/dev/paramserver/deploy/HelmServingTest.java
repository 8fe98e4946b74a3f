package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.configMapKey;
import static dev.paramserver.deploy.HelmChart.container;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code serving.*}: serving replicas (serving-service) in their own Deployment and Service, with a
 * PodDisruptionBudget and an optional HPA, on objects rendered by the real helm.
 */
@SuppressWarnings("unchecked")
class HelmServingTest {
  private static final String NAME = "ps-paramserver-serving";

  @Test
  void byDefault_noServingReplicaIsRendered() {
    HelmChart.Rendered r = HelmChart.template();
    for (String kind :
        List.of("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler")) {
      assertThat(r.ofKind(kind).stream().map(o -> at(o, "metadata.name")))
          .as(kind)
          .doesNotContain(NAME);
    }
  }

  @Test
  void replicas_renderADeployment_itsOwnService_andABudget_withTheServingConfiguration() {
    HelmChart.Rendered r =
        HelmChart.template(
            "serving.replicas=3", "serving.maxIds=500", "s3.endpoint=http://minio:9000");
    Map<String, Object> deployment = r.get("Deployment", NAME);
    assertThat(at(deployment, "spec.replicas")).isEqualTo(3);
    Map<String, Object> serving = container(deployment, "serving");
    assertThat((String) serving.get("image")).endsWith("/serving-service:0.1.0-SNAPSHOT");
    assertThat(list(serving, "ports"))
        .extracting(p -> p.get("name") + ":" + p.get("containerPort"))
        .containsExactly("http:" + ServiceRole.SERVING.httpPort(), "grpc:9094");
    assertThat(at(serving, "readinessProbe.httpGet.path")).isEqualTo("/actuator/health/readiness");
    // it reads no object store: no S3 settings (which its configuration would not bind)
    assertThat(list(serving, "env"))
        .extracting(e -> e.get("name"))
        .contains("PARAMSERVER_ADMIN_TOKEN")
        .doesNotContain("PARAMSERVER_S3_ENDPOINT");
    assertThat(list(deployment, "spec.template.spec.volumes").get(0).toString())
        .contains("key=serving.properties");
    assertThat(configMapKey(r, "serving.properties"))
        .contains("server.port=8084\n")
        .contains("spring.grpc.server.port=9094\n")
        .contains("paramserver.serving.max-ids=500\n")
        // ready while it serves, etcd or not: it keeps answering once the job ended
        .contains("management.endpoint.health.group.readiness.include=readinessState,served");

    Map<String, Object> service = r.get("Service", NAME);
    assertThat((Map<String, Object>) at(service, "spec.selector"))
        .containsEntry("app.kubernetes.io/component", "serving");
    assertThat(list(service, "spec.ports"))
        .extracting(p -> p.get("name") + ":" + p.get("port"))
        .containsExactly("http:8084", "grpc:9094");
    assertThat(((Map<String, Object>) at(service, "metadata.labels")))
        .containsEntry("paramserver.dev/metrics", "true");

    Map<String, Object> pdb = r.get("PodDisruptionBudget", NAME);
    assertThat(at(pdb, "spec.maxUnavailable")).isEqualTo(1);
    assertThat((Map<String, Object>) at(pdb, "spec.selector.matchLabels"))
        .containsEntry("app.kubernetes.io/component", "serving");
    assertThat(r.ofKind("HorizontalPodAutoscaler")).isEmpty();
  }

  @Test
  void autoscaling_rendersAnHpaOnTheDeployment_whichThenLeavesReplicasToIt() {
    HelmChart.Rendered r =
        HelmChart.template("serving.autoscaling.enabled=true", "serving.autoscaling.maxReplicas=6");
    Map<String, Object> deployment = r.get("Deployment", NAME);
    assertThat((Map<String, Object>) deployment.get("spec")).doesNotContainKey("replicas");
    Map<String, Object> hpa = r.get("HorizontalPodAutoscaler", NAME);
    assertThat(at(hpa, "spec.scaleTargetRef.kind")).isEqualTo("Deployment");
    assertThat(at(hpa, "spec.scaleTargetRef.name")).isEqualTo(NAME);
    assertThat(at(hpa, "spec.minReplicas")).isEqualTo(1);
    assertThat(at(hpa, "spec.maxReplicas")).isEqualTo(6);
    assertThat(list(hpa, "spec.metrics").get(0).toString()).contains("averageUtilization=70");
  }
}
