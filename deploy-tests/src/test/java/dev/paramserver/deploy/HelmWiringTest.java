package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.configMapKey;
import static dev.paramserver.deploy.HelmChart.container;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.service.ClientTlsProperties;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * What operators wire into the chart's pods, rendered by the real helm: extra environment, whole
 * Secrets as environment, extra volumes, S3 credentials and TLS from existing Secrets, s3://
 * checkpoints without a volume, and the masters' tracking volume.
 */
@SuppressWarnings("unchecked")
class HelmWiringTest {
  /** Each component: its values key, its workload and its container. */
  private record Component(String key, String kind, String name, String container) {}

  private static final List<Component> COMPONENTS =
      List.of(
          new Component("master", "Deployment", "ps-paramserver-master", "master"),
          new Component("pserver", "StatefulSet", "ps-paramserver-pserver", "pserver"),
          new Component("trainer", "Job", "ps-paramserver-trainer-", "trainer"));

  private static Map<String, Object> workload(HelmChart.Rendered r, Component c) {
    return "Job".equals(c.kind) ? r.named(c.kind, c.name) : r.get(c.kind, c.name);
  }

  private static Map<String, Object> envVar(Map<String, Object> container, String name) {
    return list(container, "env").stream()
        .filter(e -> name.equals(e.get("name")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no env " + name + " in " + container.get("name")));
  }

  private static Map<String, Object> mount(Map<String, Object> container, String name) {
    return list(container, "volumeMounts").stream()
        .filter(m -> name.equals(m.get("name")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no mount " + name + " in " + container.get("name")));
  }

  @Test
  void extraEnvEnvFromAndVolumes_reachEachComponentOnly() {
    for (Component c : COMPONENTS) {
      String k = c.key;
      HelmChart.Rendered r =
          HelmChart.template(
              k + ".extraEnv[0].name=EXTRA_" + k.toUpperCase(),
              k + ".extraEnv[0].value=on",
              k + ".envFrom[0].secretRef.name=" + k + "-settings",
              k + ".extraVolumes[0].name=scratch",
              k + ".extraVolumes[0].emptyDir.medium=Memory",
              k + ".extraVolumeMounts[0].name=scratch",
              k + ".extraVolumeMounts[0].mountPath=/scratch");
      Map<String, Object> w = workload(r, c);
      Map<String, Object> ctr = container(w, c.container);
      assertThat(envVar(ctr, "EXTRA_" + k.toUpperCase()).get("value")).isEqualTo("on");
      assertThat(list(ctr, "envFrom"))
          .containsExactly(Map.of("secretRef", Map.of("name", k + "-settings")));
      assertThat(mount(ctr, "scratch").get("mountPath")).isEqualTo("/scratch");
      assertThat(list(w, "spec.template.spec.volumes"))
          .anySatisfy(
              v ->
                  assertThat(v)
                      .isEqualTo(
                          Map.of("name", "scratch", "emptyDir", Map.of("medium", "Memory"))));
      for (Component other : COMPONENTS) {
        if (other != c) {
          assertThat(list(container(workload(r, other), other.container), "env"))
              .as(other.key + " gets no env of " + k)
              .noneSatisfy(e -> assertThat(e.get("name")).isEqualTo("EXTRA_" + k.toUpperCase()));
        }
      }
    }
  }

  @Test
  void s3Credentials_comeFromTheExistingSecret_neverFromTheConfigMap() {
    HelmChart.Rendered r =
        HelmChart.template(
            "s3.existingSecret=minio-creds",
            "s3.endpoint=http://minio:9000",
            "s3.pathStyle=true",
            "pserver.checkpointDir=s3://ckpt/job");
    for (Component c : COMPONENTS) {
      Map<String, Object> ctr = container(workload(r, c), c.container);
      for (String var : List.of("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")) {
        assertThat(at(envVar(ctr, var), "valueFrom.secretKeyRef"))
            .isEqualTo(Map.of("name", "minio-creds", "key", var));
      }
      assertThat(envVar(ctr, "PARAMSERVER_S3_ENDPOINT").get("value"))
          .isEqualTo("http://minio:9000");
      assertThat(envVar(ctr, "PARAMSERVER_S3_PATH_STYLE").get("value")).isEqualTo("true");
      assertThat(configMapKey(r, c.key + ".properties")).doesNotContain("secret-key", "access-key");
    }
  }

  @Test
  void s3CheckpointDir_rendersWithoutAVolume() {
    HelmChart.Rendered r = HelmChart.template("pserver.checkpointDir=s3://ckpt/job");
    Map<String, Object> sts = r.get("StatefulSet", "ps-paramserver-pserver");
    assertThat(at(sts, "spec.volumeClaimTemplates")).isNull();
    assertThat(list(container(sts, "pserver"), "volumeMounts"))
        .noneSatisfy(m -> assertThat(m.get("name")).isEqualTo("checkpoints"));
    assertThat(list(sts, "spec.template.spec.volumes"))
        .noneSatisfy(v -> assertThat(v.get("name")).isEqualTo("checkpoints"));
    assertThat(configMapKey(r, "pserver.properties"))
        .contains("paramserver.pserver.checkpoint-dir=s3://ckpt/job\n");
    HelmChart.Rendered off =
        HelmChart.template(
            "pserver.checkpointDir=s3://ckpt/job", "pserver.persistence.enabled=false");
    assertThat(list(off.get("StatefulSet", "ps-paramserver-pserver"), "spec.template.spec.volumes"))
        .noneSatisfy(v -> assertThat(v.get("name")).isEqualTo("checkpoints"));
    // a local directory keeps its PVC
    assertThat(
            mount(
                    container(
                        HelmChart.template().get("StatefulSet", "ps-paramserver-pserver"),
                        "pserver"),
                    "checkpoints")
                .get("mountPath"))
        .isEqualTo("/var/lib/paramserver/checkpoints");
  }

  @Test
  void tlsSecret_isMountedWhereTheServersAndClientsTlsPropertiesPoint() {
    HelmChart.Rendered r = HelmChart.template("tls.existingSecret=ps-tls", "tls.mutual=true");
    Set<String> clientProps = ConfigurationPropertyNames.of(ClientTlsProperties.class);
    for (Component c : COMPONENTS) {
      Map<String, Object> w = workload(r, c);
      Map<String, Object> m = mount(container(w, c.container), "tls");
      assertThat(m)
          .containsEntry("mountPath", "/etc/paramserver/tls")
          .containsEntry("readOnly", true);
      assertThat(list(w, "spec.template.spec.volumes"))
          .anySatisfy(v -> assertThat(at(v, "secret.secretName")).isEqualTo("ps-tls"));
      String props = configMapKey(r, c.key + ".properties");
      for (String p :
          List.of(
              "paramserver.grpc-client.tls.enabled=true",
              "paramserver.grpc-client.tls.trust-cert-collection=/etc/paramserver/tls/ca.crt",
              "paramserver.grpc-client.tls.certificate-chain=/etc/paramserver/tls/tls.crt",
              "paramserver.grpc-client.tls.private-key=/etc/paramserver/tls/tls.key")) {
        assertThat(props).as(c.key).contains(p + "\n");
        assertThat(clientProps).contains(p.substring(0, p.indexOf('=')));
      }
      if (!"trainer".equals(c.key)) {
        assertThat(props)
            .contains("spring.grpc.server.ssl.enabled=true\n")
            .contains("spring.grpc.server.ssl.bundle=grpc-server\n")
            .contains(
                "spring.ssl.bundle.pem.grpc-server.keystore.certificate="
                    + "file:/etc/paramserver/tls/tls.crt\n")
            .contains(
                "spring.ssl.bundle.pem.grpc-server.keystore.private-key="
                    + "file:/etc/paramserver/tls/tls.key\n")
            .contains(
                "spring.ssl.bundle.pem.grpc-server.truststore.certificate="
                    + "file:/etc/paramserver/tls/ca.crt\n")
            .contains("spring.grpc.server.ssl.client-auth=REQUIRE\n")
            .doesNotContain("grpc.server.security");
      }
    }
    assertThat(configMapKey(HelmChart.template(), "master.properties"))
        .doesNotContain("tls", "security");
  }

  @Test
  void masters_writeRunTrackingToTheirWritableTrackingVolume() {
    HelmChart.Rendered r = HelmChart.template();
    Map<String, Object> master = r.get("Deployment", "ps-paramserver-master");
    assertThat(mount(container(master, "master"), "tracking").get("mountPath"))
        .isEqualTo("/var/lib/paramserver/tracking");
    assertThat(list(master, "spec.template.spec.volumes"))
        .anySatisfy(v -> assertThat(v).isEqualTo(Map.of("name", "tracking", "emptyDir", Map.of())));
    Set<String> names = ConfigurationPropertyNames.of(MasterProperties.class);
    String props = configMapKey(r, "master.properties");
    for (String p :
        List.of(
            "paramserver.master.tracking.dir=/var/lib/paramserver/tracking",
            "paramserver.master.tracking.metrics-file=/var/lib/paramserver/tracking/metrics.jsonl",
            "paramserver.master.tracking.tensorboard-dir=/var/lib/paramserver/tracking/tensorboard")) {
      assertThat(props).contains(p + "\n");
      assertThat(names).contains(p.substring(0, p.indexOf('=')));
    }
    HelmChart.Rendered pvc =
        HelmChart.template("master.tracking.volume.persistentVolumeClaim.claimName=runs");
    assertThat(list(pvc.get("Deployment", "ps-paramserver-master"), "spec.template.spec.volumes"))
        .anySatisfy(v -> assertThat(at(v, "persistentVolumeClaim.claimName")).isEqualTo("runs"));
    HelmChart.Rendered off = HelmChart.template("master.tracking.enabled=false");
    assertThat(configMapKey(off, "master.properties"))
        .contains("paramserver.master.tracking.enabled=false")
        .doesNotContain("tracking.dir", "tracking.metrics-file");
  }

  @Test
  void adminToken_fromAnExistingSecret_createsNoSecret() {
    HelmChart.Rendered r = HelmChart.template("adminToken.existingSecret=ops-token");
    // the one Secret left holds the bundled etcd's passwords (etcd.auth)
    assertThat(r.ofKind("Secret").stream().map(o -> at(o, "metadata.name")))
        .containsExactly("ps-paramserver-etcd-auth");
    for (Component c : COMPONENTS) {
      assertThat(
              at(
                  envVar(container(workload(r, c), c.container), "PARAMSERVER_ADMIN_TOKEN"),
                  "valueFrom.secretKeyRef.name"))
          .isEqualTo("ops-token");
    }
  }
}
