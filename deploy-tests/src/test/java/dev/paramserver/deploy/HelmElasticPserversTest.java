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
 * {@code pserver.elastic.enabled}: the pserver StatefulSet's replicas scale the job
 * (docs/deploy.md, "Scaling pservers on Kubernetes"), on objects rendered by the real helm.
 */
@SuppressWarnings("unchecked")
class HelmElasticPserversTest {
  private static final String STS = "ps-paramserver-pserver";
  private static final HelmChart.Rendered ELASTIC =
      HelmChart.template("pserver.elastic.enabled=true");

  @Test
  void elasticPservers_growTheJob_haveAPreStopHook_aTokenAndTimeForTheMoves() {
    Map<String, Object> sts = ELASTIC.get("StatefulSet", STS);
    Map<String, Object> pserver = container(sts, "pserver");
    assertThat(at(pserver, "lifecycle.preStop.httpGet.path")).isEqualTo("/k8s/pre-stop");
    assertThat(at(pserver, "lifecycle.preStop.httpGet.port")).isEqualTo("http");
    assertThat(at(sts, "spec.template.spec.automountServiceAccountToken")).isEqualTo(true);
    assertThat(at(sts, "spec.template.spec.terminationGracePeriodSeconds")).isEqualTo(600);
    assertThat(configMapKey(ELASTIC, "pserver.properties"))
        .contains("paramserver.pserver.kubernetes.grow-job=true\n")
        .contains("paramserver.pserver.kubernetes.stateful-set=" + STS + "\n")
        // the grace period minus the pserver's own, left for the drain and the last checkpoint
        .contains("paramserver.pserver.kubernetes.pre-stop-timeout=540s");
  }

  @Test
  void theRole_allowsGetOnThePserverStatefulSetAlone_boundToThePodsAccount() {
    Map<String, Object> role = ELASTIC.get("Role", "ps-paramserver-pserver-elastic");
    assertThat(list(role, "rules")).hasSize(1);
    Map<String, Object> rule = list(role, "rules").get(0);
    assertThat((List<Object>) rule.get("apiGroups")).containsExactly("apps");
    assertThat((List<Object>) rule.get("resources")).containsExactly("statefulsets");
    assertThat((List<Object>) rule.get("resourceNames")).containsExactly(STS);
    assertThat((List<Object>) rule.get("verbs")).containsExactly("get");
    Map<String, Object> binding = ELASTIC.get("RoleBinding", "ps-paramserver-pserver-elastic");
    assertThat(at(binding, "roleRef.name")).isEqualTo("ps-paramserver-pserver-elastic");
    assertThat(list(binding, "subjects").get(0).get("name"))
        .isEqualTo(at(ELASTIC.get("StatefulSet", STS), "spec.template.spec.serviceAccountName"));
  }

  @Test
  void aChangeOfTheCount_scalesTheJob_withoutRestartingThePservers() {
    Object checksum =
        at(ELASTIC.get("StatefulSet", STS), "spec.template.metadata.annotations.checksum/config");
    HelmChart.Rendered five =
        HelmChart.template("pserver.elastic.enabled=true", "pserver.replicas=5");
    assertThat(at(five.get("StatefulSet", STS), "spec.replicas")).isEqualTo(5);
    assertThat(
            at(five.get("StatefulSet", STS), "spec.template.metadata.annotations.checksum/config"))
        .isEqualTo(checksum);
    // without elastic the count is a setting of the pods like any other
    HelmChart.Rendered plain = HelmChart.template();
    HelmChart.Rendered plainFive = HelmChart.template("pserver.replicas=5");
    assertThat(
            at(
                plainFive.get("StatefulSet", STS),
                "spec.template.metadata.annotations.checksum/config"))
        .isNotEqualTo(
            at(
                plain.get("StatefulSet", STS),
                "spec.template.metadata.annotations.checksum/config"));
  }

  @Test
  void byDefault_noHook_noToken_noRole() {
    HelmChart.Rendered plain = HelmChart.template();
    Map<String, Object> sts = plain.get("StatefulSet", STS);
    assertThat(at(container(sts, "pserver"), "lifecycle")).isNull();
    assertThat(at(sts, "spec.template.spec.automountServiceAccountToken")).isEqualTo(false);
    assertThat(at(sts, "spec.template.spec.terminationGracePeriodSeconds")).isEqualTo(60);
    assertThat(plain.ofKind("Role"))
        .noneMatch(r -> "ps-paramserver-pserver-elastic".equals(at(r, "metadata.name")));
    assertThat(configMapKey(plain, "pserver.properties")).doesNotContain("kubernetes");
  }

  @Test
  void aGracePeriodLeavingTheHookNoTime_isRefused() {
    assertThat(
            HelmChart.failure(
                "pserver.elastic.enabled=true", "pserver.elastic.terminationGracePeriodSeconds=60"))
        .contains("must exceed pserver.terminationGracePeriodSeconds");
  }
}
