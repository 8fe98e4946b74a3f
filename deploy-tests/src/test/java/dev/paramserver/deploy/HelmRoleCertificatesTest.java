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
 * {@code tls.roleSecrets}: a certificate per role (its subject's OU names the role, which the
 * pservers authorise internal calls by), each role's pods mounting their own Secret where the
 * shared one goes, on objects rendered by the real helm.
 */
class HelmRoleCertificatesTest {
  private static final List<String[]> WORKLOADS =
      List.of(
          new String[] {"master", "Deployment", "ps-paramserver-master"},
          new String[] {"pserver", "StatefulSet", "ps-paramserver-pserver"},
          new String[] {"serving", "Deployment", "ps-paramserver-serving"},
          new String[] {"trainer", "Job", "ps-paramserver-trainer-"});

  private static Map<String, Object> workload(HelmChart.Rendered r, String[] w) {
    return "Job".equals(w[1]) ? r.named(w[1], w[2]) : r.get(w[1], w[2]);
  }

  /** The Secret behind the pod's volume "tls", checked to be mounted at the TLS mount path. */
  private static String tlsSecret(Map<String, Object> workload, String containerName) {
    assertThat(list(container(workload, containerName), "volumeMounts"))
        .anySatisfy(
            m ->
                assertThat(m)
                    .containsEntry("name", "tls")
                    .containsEntry("mountPath", "/etc/paramserver/tls")
                    .containsEntry("readOnly", true));
    return list(workload, "spec.template.spec.volumes").stream()
        .filter(v -> "tls".equals(v.get("name")))
        .map(v -> (String) at(v, "secret.secretName"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no volume tls"));
  }

  @Test
  void roleSecrets_eachRoleMountsItsOwnCertificate_andEveryRoleSpeaksMutualTls() {
    HelmChart.Rendered r =
        HelmChart.template(
            "tls.mutual=true",
            "serving.replicas=1",
            "tls.roleSecrets.master=tls-master",
            "tls.roleSecrets.pserver=tls-pserver",
            "tls.roleSecrets.trainer=tls-trainer",
            "tls.roleSecrets.serving=tls-serving");
    for (String[] w : WORKLOADS) {
      assertThat(tlsSecret(workload(r, w), w[0])).as(w[0]).isEqualTo("tls-" + w[0]);
      String props = configMapKey(r, w[0] + ".properties");
      assertThat(props)
          .as(w[0])
          .contains("paramserver.grpc-client.tls.enabled=true\n")
          .contains("paramserver.grpc-client.tls.certificate-chain=/etc/paramserver/tls/tls.crt\n")
          .contains("paramserver.grpc-client.tls.private-key=/etc/paramserver/tls/tls.key\n");
      if (!"trainer".equals(w[0])) {
        assertThat(props)
            .as(w[0])
            .contains("spring.grpc.server.ssl.enabled=true\n")
            .contains("spring.grpc.server.ssl.client-auth=REQUIRE\n");
      }
    }
  }

  @Test
  void aRoleWithoutItsSecret_fallsBackOnTheSharedOne() {
    HelmChart.Rendered r =
        HelmChart.template(
            "tls.existingSecret=tls-shared",
            "tls.roleSecrets.pserver=tls-pserver",
            "serving.replicas=1");
    assertThat(tlsSecret(r.get("StatefulSet", "ps-paramserver-pserver"), "pserver"))
        .isEqualTo("tls-pserver");
    assertThat(tlsSecret(r.get("Deployment", "ps-paramserver-master"), "master"))
        .isEqualTo("tls-shared");
    assertThat(tlsSecret(r.get("Deployment", "ps-paramserver-serving"), "serving"))
        .isEqualTo("tls-shared");
  }

  @Test
  void aRenderedRoleWithNoSecretAtAll_isRefused_namingTheRoleAndItsOu() {
    assertThat(
            HelmChart.failure(
                "tls.roleSecrets.master=tls-master",
                "tls.roleSecrets.pserver=tls-pserver",
                "tls.roleSecrets.trainer=tls-trainer",
                "serving.replicas=1"))
        .contains("tls.roleSecrets.serving is empty")
        .contains("OU=serving");
    // serving replicas not rendered: their Secret is not needed
    HelmChart.Rendered r =
        HelmChart.template(
            "tls.roleSecrets.master=tls-master",
            "tls.roleSecrets.pserver=tls-pserver",
            "tls.roleSecrets.trainer=tls-trainer");
    assertThat(tlsSecret(r.named("Job", "ps-paramserver-trainer-"), "trainer"))
        .isEqualTo("tls-trainer");
  }
}
