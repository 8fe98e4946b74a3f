package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.at;
import static dev.paramserver.deploy.HelmChart.configMapKey;
import static dev.paramserver.deploy.HelmChart.container;
import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The chart's day-two behaviour, on objects rendered by the real helm: rollouts that finish,
 * budgets that allow drains, an upgradable trainer Job, the job's end, and the hardening defaults.
 */
@SuppressWarnings("unchecked")
class HelmChartRenderTest {
  private static final HelmChart.Rendered DEFAULTS = HelmChart.template();

  @Test
  void masterRollout_surgesOneStandbyAtATime_andStandbysAreReady() {
    Map<String, Object> master = DEFAULTS.get("Deployment", "ps-paramserver-master");
    assertThat(at(master, "spec.strategy.rollingUpdate.maxUnavailable")).isEqualTo(0);
    assertThat(at(master, "spec.strategy.rollingUpdate.maxSurge")).isEqualTo(1);
    assertThat(at(container(master, "master"), "readinessProbe.httpGet.path"))
        .isEqualTo("/actuator/health/readiness");
    // readiness leaves leadership out (a standby is Ready); leadership is its own group
    String props = configMapKey(DEFAULTS, "master.properties");
    assertThat(props)
        .contains("management.endpoint.health.group.readiness.include=readinessState,etcd\n")
        .contains("management.endpoint.health.group.leader.include=leadership\n");
  }

  @Test
  void leaderService_selectsTheLabelTheLeaderSidecarSetsOnItsOwnPod() {
    Map<String, Object> service = DEFAULTS.get("Service", "ps-paramserver-master");
    assertThat(at(service, "spec.selector")).asString().contains("paramserver.dev/leader=true");
    Map<String, Object> master = DEFAULTS.get("Deployment", "ps-paramserver-master");
    assertThat(at(master, "spec.template.spec.automountServiceAccountToken")).isEqualTo(true);
    Map<String, Object> sidecar = container(master, "leader-label");
    String script = String.join("\n", (List<String>) sidecar.get("args"));
    assertThat(script)
        .contains("/actuator/health/leader")
        .contains("paramserver.dev/leader")
        .contains("-X PATCH");
    Map<String, Object> role = DEFAULTS.get("Role", "ps-paramserver");
    assertThat(list(role, "rules"))
        .anySatisfy(
            r -> {
              assertThat((List<Object>) r.get("resources")).containsExactly("pods");
              assertThat((List<Object>) r.get("verbs")).contains("patch");
            });

    HelmChart.Rendered off = HelmChart.template("master.leaderLabel.enabled=false");
    assertThat(at(off.get("Service", "ps-paramserver-master"), "spec.selector"))
        .asString()
        .doesNotContain("paramserver.dev/leader");
    Map<String, Object> plain = off.get("Deployment", "ps-paramserver-master");
    assertThat(list(plain, "spec.template.spec.containers")).hasSize(1);
    assertThat(at(plain, "spec.template.spec.automountServiceAccountToken")).isEqualTo(false);
  }

  @Test
  void disruptionBudgets_allowDrains() {
    // Job pods have no scale subresource: the trainer budget must be minAvailable
    Map<String, Object> trainer = DEFAULTS.get("PodDisruptionBudget", "ps-paramserver-trainer");
    assertThat(at(trainer, "spec.minAvailable")).isEqualTo(1);
    assertThat(at(trainer, "spec.maxUnavailable")).isNull();
    HelmChart.Rendered wide =
        HelmChart.template(
            "trainer.parallelism=4",
            "trainer.completions=4",
            "trainer.podDisruptionBudget.maxUnavailable=3");
    assertThat(at(wide.get("PodDisruptionBudget", "ps-paramserver-trainer"), "spec.minAvailable"))
        .isEqualTo(1);
    for (String name : List.of("ps-paramserver-master", "ps-paramserver-pserver")) {
      Map<String, Object> pdb = DEFAULTS.get("PodDisruptionBudget", name);
      assertThat(at(pdb, "spec.maxUnavailable")).as(name).isEqualTo(1);
      assertThat(at(pdb, "spec.unhealthyPodEvictionPolicy")).as(name).isEqualTo("AlwaysAllow");
    }
  }

  @Test
  void trainerJobName_changesWithItsSpec_soUpgradesCreateANewJob() {
    String name = (String) at(DEFAULTS.named("Job", "ps-paramserver-trainer-"), "metadata.name");
    assertThat(name).matches("ps-paramserver-trainer-[0-9a-f]{8}").hasSizeLessThanOrEqualTo(63);
    assertThat(at(HelmChart.template().named("Job", "ps-paramserver-trainer-"), "metadata.name"))
        .as("same values, same name")
        .isEqualTo(name);
    HelmChart.Rendered changed = HelmChart.template("trainer.learningRate=0.05");
    assertThat(at(changed.named("Job", "ps-paramserver-trainer-"), "metadata.name"))
        .isNotEqualTo(name);
    // the job-end Job watches the trainer Job of the same render
    Map<String, Object> end = DEFAULTS.named("Job", "ps-paramserver-job-end-");
    assertThat(list(end, "spec.template.spec.containers").get(0).get("env"))
        .asString()
        .contains("TRAINER_JOB, value=" + name);
  }

  @Test
  void model_isWrittenToAPvcThatOutlivesTheRelease() {
    assertThat(configMapKey(DEFAULTS, "trainer.properties"))
        .contains("paramserver.trainer.model-output=/var/lib/paramserver/model/model.pb");
    Map<String, Object> pvc = DEFAULTS.get("PersistentVolumeClaim", "ps-paramserver-model");
    assertThat(at(pvc, "metadata.annotations")).asString().contains("helm.sh/resource-policy=keep");
    Map<String, Object> job = DEFAULTS.named("Job", "ps-paramserver-trainer-");
    assertThat(list(job, "spec.template.spec.volumes"))
        .anySatisfy(
            v ->
                assertThat(at(v, "persistentVolumeClaim.claimName"))
                    .isEqualTo("ps-paramserver-model"));
    // a ReadWriteOnce claim: every trainer on the node that has it
    assertThat(at(job, "spec.template.spec.affinity.podAffinity")).isNotNull();
  }

  @Test
  void everyContainer_hasAReadOnlyRoot_andAWritableTmp_andOnlyApiCallersGetAToken() {
    List<String> problems = new ArrayList<>();
    DEFAULTS
        .podSpecs()
        .forEach(
            (where, spec) -> {
              List<Map<String, Object>> all = new ArrayList<>(list(spec, "containers"));
              all.addAll(list(spec, "initContainers"));
              for (Map<String, Object> c : all) {
                if (!Boolean.TRUE.equals(at(c, "securityContext.readOnlyRootFilesystem"))) {
                  problems.add(where + " " + c.get("name") + ": root filesystem not read-only");
                }
                boolean tmp =
                    list(c, "volumeMounts").stream()
                        .anyMatch(m -> "/tmp".equals(m.get("mountPath")));
                if (!tmp && !where.contains("etcd")) {
                  problems.add(where + " " + c.get("name") + ": no /tmp mount");
                }
              }
              boolean callsApi = where.contains("-master") || where.contains("-job-end-");
              if (!Boolean.valueOf(callsApi).equals(spec.get("automountServiceAccountToken"))) {
                problems.add(where + ": automountServiceAccountToken should be " + callsApi);
              }
              if (!"ps-paramserver".equals(spec.get("serviceAccountName"))) {
                problems.add(where + ": not the chart's ServiceAccount");
              }
            });
    assertThat(problems).isEmpty();
    assertThat(DEFAULTS.get("ServiceAccount", "ps-paramserver").get("automountServiceAccountToken"))
        .isEqualTo(false);
  }

  @Test
  void images_areLocalNamesByDefault_andTakeARegistryPrefix() {
    Map<String, Object> master = DEFAULTS.get("Deployment", "ps-paramserver-master");
    assertThat(container(master, "master").get("image"))
        .isEqualTo("paramserver/master-service:" + RepoFiles.projectVersion());
    HelmChart.Rendered reg = HelmChart.template("image.registry=registry.example.com/ml/");
    assertThat(container(reg.get("Deployment", "ps-paramserver-master"), "master").get("image"))
        .isEqualTo(
            "registry.example.com/ml/paramserver/master-service:" + RepoFiles.projectVersion());
  }

  @Test
  void networkPolicies_areOnByDefault_coverEveryComponent_andCanBeTurnedOff() {
    assertThat(HelmChart.template("networkPolicy.enabled=false").ofKind("NetworkPolicy")).isEmpty();
    assertThat(DEFAULTS.ofKind("NetworkPolicy")).hasSize(4); // serving.replicas is 0 by default
    assertThat(HelmChart.template("serving.replicas=1").ofKind("NetworkPolicy"))
        .extracting(o -> at(o, "metadata.name"))
        .containsExactlyInAnyOrder(
            "ps-paramserver-master",
            "ps-paramserver-pserver",
            "ps-paramserver-serving",
            "ps-paramserver-trainer",
            "ps-paramserver-etcd");
  }

  @Test
  void dashboardConfigMap_carriesTheSidecarLabel_andTheDashboardFile() {
    assertThat(DEFAULTS.ofKind("ConfigMap")).hasSize(1);
    HelmChart.Rendered on = HelmChart.template("grafanaDashboard.enabled=true");
    Map<String, Object> cm = on.get("ConfigMap", "ps-paramserver-dashboard");
    assertThat(at(cm, "metadata.labels")).asString().contains("grafana_dashboard=1");
    String dashboard = RepoFiles.read("deploy/grafana/dashboards/paramserver.json");
    assertThat(RepoFiles.read("helm/paramserver/dashboards/paramserver.json"))
        .as("the chart's copy of the dashboard")
        .isEqualTo(dashboard);
    Map<String, Object> data = (Map<String, Object>) cm.get("data");
    assertThat(((String) data.get("paramserver.json")).strip()).isEqualTo(dashboard.strip());
  }

  @Test
  void prometheusRule_alertsOnLeaderEtcdCheckpointsPushesAndProgress() {
    HelmChart.Rendered on =
        HelmChart.template("prometheusRule.enabled=true", "pserver.checkpointInterval=2m");
    Map<String, Object> rule = on.get("PrometheusRule", "ps-paramserver");
    List<Map<String, Object>> rules = list(list(rule, "spec.groups").get(0), "rules");
    assertThat(rules)
        .extracting(r -> r.get("alert"))
        .containsExactly(
            "ParamserverNoMasterLeader",
            "ParamserverEtcdDisconnected",
            "ParamserverCheckpointTooOld",
            "ParamserverPushesDropped",
            "ParamserverTrainingStalled");
    // three checkpoint intervals of 2 minutes
    assertThat(rules.get(2).get("expr"))
        .asString()
        .isEqualTo(
            "paramserver_pserver_checkpoint_age_seconds{namespace=\"paramserver\","
                + "paramserver_job=\"default\"} > 360");
  }

  @Test
  void chart_needsKubernetes128_forThePodIndexLabel() {
    assertThat(RepoFiles.yaml("helm/paramserver/Chart.yaml").get("kubeVersion"))
        .isEqualTo(">=1.28.0-0");
    Map<String, Object> pserver = DEFAULTS.get("StatefulSet", "ps-paramserver-pserver");
    assertThat(container(pserver, "pserver").get("env"))
        .asString()
        .contains("apps.kubernetes.io/pod-index");
  }
}
