package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.configMapKey;
import static dev.paramserver.deploy.HelmChart.container;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.service.CommonProperties;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * {@code etcd.auth}: the bundled etcd with authentication on by default (a container beside it runs
 * {@code psctl etcd-auth}; the passwords in a generated Secret), every service logging in as the
 * job's user; off, or an external etcd, on objects rendered by the real helm.
 */
@SuppressWarnings("unchecked")
class HelmEtcdAuthTest {
  private static final String SECRET = "ps-paramserver-etcd-auth";
  private static final List<String[]> SERVICES =
      List.of(
          new String[] {"master", "Deployment", "ps-paramserver-master"},
          new String[] {"pserver", "StatefulSet", "ps-paramserver-pserver"},
          new String[] {"serving", "Deployment", "ps-paramserver-serving"},
          new String[] {"trainer", "Job", "ps-paramserver-trainer-"});

  private static Map<String, Object> service(HelmChart.Rendered r, String[] s) {
    Map<String, Object> w = "Job".equals(s[1]) ? r.named(s[1], s[2]) : r.get(s[1], s[2]);
    return container(w, s[0]);
  }

  private static Optional<Map<String, Object>> env(Map<String, Object> container, String name) {
    return list(container, "env").stream().filter(e -> name.equals(e.get("name"))).findFirst();
  }

  private static Optional<Map<String, Object>> authContainer(HelmChart.Rendered r) {
    return list(r.get("StatefulSet", "ps-paramserver-etcd"), "spec.template.spec.containers")
        .stream()
        .filter(c -> "etcd-auth".equals(c.get("name")))
        .findFirst();
  }

  @Test
  void byDefault_theBundledEtcdTurnsAuthOn_andEveryServiceLogsInAsTheJobUser() {
    HelmChart.Rendered r = HelmChart.template("serving.replicas=1");
    Map<String, Object> auth = authContainer(r).orElseThrow();
    assertThat((String) auth.get("image")).endsWith("/psctl:0.1.0-SNAPSHOT");
    assertThat((List<String>) auth.get("args"))
        .containsSubsequence("etcd-auth", "--etcd", "http://127.0.0.1:2379")
        .containsSubsequence("--etcd-user", "paramserver")
        .contains("--hold");
    assertThat(at(env(auth, "PSCTL_ETCD_PASSWORD").orElseThrow(), "valueFrom.secretKeyRef"))
        .isEqualTo(Map.of("name", SECRET, "key", "password"));
    assertThat(at(env(auth, "PSCTL_ETCD_ROOT_PASSWORD").orElseThrow(), "valueFrom.secretKeyRef"))
        .isEqualTo(Map.of("name", SECRET, "key", "root-password"));

    Map<String, Object> data = (Map<String, Object>) r.get("Secret", SECRET).get("data");
    assertThat(data).containsOnlyKeys("password", "root-password");
    String password = new String(Base64.getDecoder().decode((String) data.get("password")));
    assertThat(password).hasSizeGreaterThanOrEqualTo(32);

    assertThat(ConfigurationPropertyNames.of(CommonProperties.class))
        .contains("paramserver.etcd.user", "paramserver.etcd.password");
    for (String[] s : SERVICES) {
      assertThat(configMapKey(r, s[0] + ".properties"))
          .as(s[0])
          .contains("paramserver.etcd.user=paramserver\n")
          .doesNotContain(password);
      assertThat(at(env(service(r, s), "PARAMSERVER_ETCD_PASSWORD").orElseThrow(), "valueFrom"))
          .as(s[0])
          .isEqualTo(Map.of("secretKeyRef", Map.of("name", SECRET, "key", "password")));
    }
  }

  @Test
  void givenSecretAndUser_areUsed_andNoSecretIsGenerated() {
    HelmChart.Rendered r =
        HelmChart.template("etcd.auth.user=trainjob", "etcd.auth.passwordSecret=my-etcd");
    assertThat(r.ofKind("Secret").stream().map(o -> at(o, "metadata.name"))).doesNotContain(SECRET);
    Map<String, Object> auth = authContainer(r).orElseThrow();
    assertThat((List<String>) auth.get("args")).containsSubsequence("--etcd-user", "trainjob");
    assertThat(at(env(auth, "PSCTL_ETCD_ROOT_PASSWORD").orElseThrow(), "valueFrom.secretKeyRef"))
        .isEqualTo(Map.of("name", "my-etcd", "key", "root-password"));
    assertThat(configMapKey(r, "pserver.properties")).contains("paramserver.etcd.user=trainjob\n");
  }

  @Test
  void authOff_orAnExternalEtcd_rendersNoAuthContainerNorSecret() {
    for (HelmChart.Rendered r :
        List.of(
            HelmChart.template("etcd.auth.enabled=false"),
            HelmChart.template("etcd.external.endpoints={http://etcd.infra:2379}"))) {
      assertThat(r.ofKind("Secret").stream().map(o -> at(o, "metadata.name")))
          .doesNotContain(SECRET);
      assertThat(configMapKey(r, "master.properties")).doesNotContain("paramserver.etcd.user");
      assertThat(env(service(r, SERVICES.get(0)), "PARAMSERVER_ETCD_PASSWORD")).isEmpty();
    }
    assertThat(authContainer(HelmChart.template("etcd.auth.enabled=false"))).isEmpty();
    // an external etcd with authentication: the user and Secret given
    HelmChart.Rendered external =
        HelmChart.template(
            "etcd.external.endpoints={http://etcd.infra:2379}",
            "etcd.auth.user=ps",
            "etcd.auth.passwordSecret=infra-etcd");
    assertThat(configMapKey(external, "master.properties")).contains("paramserver.etcd.user=ps\n");
    assertThat(
            at(
                env(service(external, SERVICES.get(0)), "PARAMSERVER_ETCD_PASSWORD").orElseThrow(),
                "valueFrom.secretKeyRef"))
        .isEqualTo(Map.of("name", "infra-etcd", "key", "password"));
  }
}
