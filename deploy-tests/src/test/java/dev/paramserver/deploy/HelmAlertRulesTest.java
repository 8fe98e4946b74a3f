package dev.paramserver.deploy;

import static dev.paramserver.deploy.HelmChart.list;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * The chart's alerts, rendered by the real helm and evaluated by the real promtool ({@code promtool
 * test rules}, Debian's prometheus package) on series that play a job's life: quiet after a
 * successful job once masters and trainers are gone, loud while trainers run without a leader, and
 * blind to another namespace's release of the same job name.
 */
@SuppressWarnings("unchecked")
class HelmAlertRulesTest {
  private static final HelmChart.Rendered RULES = HelmChart.template("prometheusRule.enabled=true");

  @TempDir Path dir;

  private static List<Map<String, Object>> rules() {
    Map<String, Object> rule = RULES.get("PrometheusRule", "ps-paramserver");
    return list(list(rule, "spec.groups").get(0), "rules");
  }

  @Test
  void everyAlert_selectsItsNamespaceAndJob_andLinksARunbookSectionThatExists() {
    Set<String> anchors = new TreeSet<>();
    Matcher m =
        Pattern.compile("^## (\\S+)", Pattern.MULTILINE)
            .matcher(RepoFiles.read("docs/runbooks.md"));
    while (m.find()) {
      anchors.add(m.group(1).toLowerCase(Locale.ROOT));
    }
    for (Map<String, Object> r : rules()) {
      String alert = (String) r.get("alert");
      assertThat((String) r.get("expr"))
          .as(alert)
          .contains("namespace=\"paramserver\",paramserver_job=\"default\"")
          .doesNotContainPattern("[a-z_]+\\{paramserver_job=");
      String url = (String) ((Map<String, Object>) r.get("annotations")).get("runbook_url");
      assertThat(url).as(alert).isEqualTo("docs/runbooks.md#" + alert.toLowerCase(Locale.ROOT));
      assertThat(anchors)
          .as("docs/runbooks.md has a section ## " + alert)
          .contains(alert.toLowerCase(Locale.ROOT));
    }
  }

  @Test
  void noMasterLeader_isQuietAfterTheJob_firesWhileTrainersRun_andIgnoresOtherNamespaces()
      throws Exception {
    String ours = "namespace=\"paramserver\",paramserver_job=\"default\"";
    String theirs = "namespace=\"other\",paramserver_job=\"default\"";
    String tests =
        """
        rule_files: [rules.yaml]
        evaluation_interval: 15s
        tests:
          # a successful job: leader and trainers until minute 10, then the job end scaled the
          # masters to 0 and the trainers exited; nothing fires, ever
          - interval: 1m
            input_series:
              - series: 'paramserver_master_leader{%1$s,instance="m0"}'
                values: '1x10 _x20'
              - series: 'paramserver_trainer_samples_total{%1$s,instance="t0"}'
                values: '0+100x10 _x20'
            alert_rule_test:
              - {eval_time: 5m, alertname: ParamserverNoMasterLeader, exp_alerts: []}
              - {eval_time: 25m, alertname: ParamserverNoMasterLeader, exp_alerts: []}
          # trainers run, the masters are gone (no series at all): it fires
          - interval: 1m
            input_series:
              - series: 'paramserver_trainer_samples_total{%1$s,instance="t0"}'
                values: '0+100x30'
            alert_rule_test:
              - {eval_time: 10m, alertname: ParamserverNoMasterLeader, exp_alerts: [{exp_labels: {severity: critical, namespace: paramserver, paramserver_job: default}, exp_annotations: %3$s}]}
          # another namespace's release of the same job name leads; ours has masters but no leader
          - interval: 1m
            input_series:
              - series: 'paramserver_master_leader{%2$s,instance="m0"}'
                values: '1x30'
              - series: 'paramserver_master_leader{%1$s,instance="m0"}'
                values: '0x30'
              - series: 'paramserver_trainer_samples_total{%1$s,instance="t0"}'
                values: '0+100x30'
            alert_rule_test:
              - {eval_time: 10m, alertname: ParamserverNoMasterLeader, exp_alerts: [{exp_labels: {severity: critical}, exp_annotations: %3$s}]}
          # ... and the other namespace's leaderless job does not page ours
          - interval: 1m
            input_series:
              - series: 'paramserver_master_leader{%1$s,instance="m0"}'
                values: '1x30'
              - series: 'paramserver_master_leader{%2$s,instance="m0"}'
                values: '0x30'
              - series: 'paramserver_trainer_samples_total{%2$s,instance="t0"}'
                values: '0+100x30'
            alert_rule_test:
              - {eval_time: 10m, alertname: ParamserverNoMasterLeader, exp_alerts: []}
        """
            .formatted(
                ours,
                theirs,
                "{summary: No master leads job default, description: "
                    + quoted(description("ParamserverNoMasterLeader"))
                    + ", runbook_url: docs/runbooks.md#paramservernomasterleader}");
    promtoolTestRules(tests);
  }

  @Test
  void everyAlert_isQuietOnAHealthyRunningJob() throws Exception {
    String ours = "namespace=\"paramserver\",paramserver_job=\"default\"";
    StringBuilder b = new StringBuilder();
    b.append("rule_files: [rules.yaml]\nevaluation_interval: 15s\ntests:\n");
    b.append("  - interval: 1m\n    input_series:\n");
    Map<String, String> series = new LinkedHashMap<>();
    series.put("paramserver_master_leader{%s,instance=\"m0\"}", "1x30");
    series.put("paramserver_etcd_connected{%s,instance=\"p0\",role=\"pserver\"}", "1x30");
    series.put("paramserver_pserver_checkpoint_age_seconds{%s,instance=\"p0\"}", "0+0x30");
    series.put("paramserver_trainer_dropped_pushes_total{%s,instance=\"t0\"}", "0x30");
    series.put("paramserver_trainer_samples_total{%s,instance=\"t0\"}", "0+100x30");
    series.forEach(
        (s, v) ->
            b.append("      - series: '")
                .append(s.formatted(ours))
                .append("'\n        values: '")
                .append(v)
                .append("'\n"));
    b.append("    alert_rule_test:\n");
    for (Map<String, Object> r : rules()) {
      b.append("      - {eval_time: 20m, alertname: ")
          .append(r.get("alert"))
          .append(", exp_alerts: []}\n");
    }
    promtoolTestRules(b.toString());
  }

  private static String description(String alert) {
    return rules().stream()
        .filter(r -> alert.equals(r.get("alert")))
        .map(r -> (String) ((Map<String, Object>) r.get("annotations")).get("description"))
        .findFirst()
        .orElseThrow();
  }

  private static String quoted(String s) {
    return "'" + s.replace("'", "''") + "'";
  }

  /** Writes the rendered groups as rules.yaml beside the tests and runs promtool test rules. */
  private void promtoolTestRules(String tests) throws IOException, InterruptedException {
    String promtool = promtool();
    assumeTrue(promtool != null, "promtool is not installed (apt-get install -y prometheus)");
    Map<String, Object> rule = RULES.get("PrometheusRule", "ps-paramserver");
    Files.writeString(
        dir.resolve("rules.yaml"), new Yaml().dump(Map.of("groups", list(rule, "spec.groups"))));
    Files.writeString(dir.resolve("tests.yaml"), tests);
    Process p =
        new ProcessBuilder(promtool, "test", "rules", "tests.yaml")
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes());
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("promtool did not end within 60 s");
    }
    assertThat(p.exitValue()).as(out).isZero();
  }

  private static String promtool() {
    List<String> dirs = new ArrayList<>(List.of(System.getenv("PATH").split(File.pathSeparator)));
    dirs.add("/usr/bin");
    return dirs.stream()
        .map(d -> Path.of(d, "promtool"))
        .filter(Files::isExecutable)
        .map(Path::toString)
        .findFirst()
        .orElse(null);
  }
}
