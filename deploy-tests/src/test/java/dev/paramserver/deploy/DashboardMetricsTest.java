package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every metric the Grafana dashboard queries is one the services register (a Micrometer meter name
 * in their sources, in its Prometheus form), one that libraries provide, or one listed as not yet
 * provided.
 */
class DashboardMetricsTest {
  /** Prometheus names that Micrometer derives from a meter name, by suffix. */
  private static final List<String> SUFFIXES =
      List.of(
          "",
          "_total",
          "_seconds",
          "_bytes",
          "_bytes_total",
          "_seconds_sum",
          "_seconds_count",
          "_seconds_max",
          "_seconds_bucket",
          "_sum",
          "_count",
          "_max",
          "_bucket");

  /** Provided by libraries or shared interceptors: the gRPC call histograms, Boot's JVM metrics. */
  private static final Set<String> LIBRARY =
      Set.of(
          "grpc_server_call_duration_seconds_bucket",
          "grpc_server_call_duration_seconds_count",
          "jvm_memory_used_bytes");

  /** Queried but not yet provided by any service. Remove a name once it exists. */
  private static final Set<String> NOT_YET_PROVIDED = Set.of();

  private static final Pattern METRIC =
      Pattern.compile("\\b((?:paramserver|pserver|grpc|jvm)_[a-z0-9_]+)\\b");
  // grpc.*: service-support's client-side call histogram (the trainer's channels)
  private static final Pattern METER_NAME =
      Pattern.compile("\"((?:paramserver|pserver|master|trainer|grpc)\\.[a-z0-9.]+)\"");

  @Test
  void everyDashboardMetric_isRegisteredByAServiceOrALibrary() {
    Set<String> registered = registeredPrometheusBases();
    Set<String> unknown = new TreeSet<>();
    for (String metric : dashboardMetrics()) {
      if (LIBRARY.contains(metric) || NOT_YET_PROVIDED.contains(metric)) {
        continue;
      }
      boolean found =
          registered.stream()
              .anyMatch(base -> SUFFIXES.stream().anyMatch(s -> metric.equals(base + s)));
      if (!found) {
        unknown.add(metric);
      }
    }
    assertThat(unknown)
        .as("dashboard metrics no service registers (registered: %s)", registered)
        .isEmpty();
  }

  @Test
  void theDashboardCoversTheIssuesPanels() {
    String json = RepoFiles.read("deploy/grafana/dashboards/paramserver.json");
    assertThat(json)
        .contains("histogram_quantile(0.5", "histogram_quantile(0.99")
        .contains(
            "grpc_server_call_duration_seconds_bucket", "grpc_client_call_duration_seconds_bucket")
        .contains("paramserver_master_tasks", "paramserver_trainer_eval_loss")
        .contains("paramserver_trainer_eval_accuracy", "paramserver_trainer_samples_total")
        .contains(
            "paramserver_pserver_pushed_bytes_total", "paramserver_pserver_checkpoint_age_seconds")
        .contains("paramserver_pserver_push_apply_seconds_bucket");
  }

  @Test
  @SuppressWarnings("unchecked")
  void theDashboardIsPortable_datasourceAndJobAreVariables() {
    Map<String, Object> dashboard = RepoFiles.yaml("deploy/grafana/dashboards/paramserver.json");
    List<Map<String, Object>> variables =
        (List<Map<String, Object>>) ((Map<String, Object>) dashboard.get("templating")).get("list");
    assertThat(variables).extracting(v -> v.get("name")).contains("datasource", "job");
    for (Map<String, Object> panel : (List<Map<String, Object>>) dashboard.get("panels")) {
      for (Map<String, Object> target :
          (List<Map<String, Object>>) panel.getOrDefault("targets", List.of())) {
        String expr = (String) target.get("expr");
        assertThat(expr).as(panel.get("title") + ": " + expr).contains("paramserver_job=~\"$job\"");
        assertThat(String.valueOf(target.get("datasource")))
            .as(panel.get("title") + " datasource")
            .contains("${datasource}");
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static Set<String> dashboardMetrics() {
    Map<String, Object> dashboard = RepoFiles.yaml("deploy/grafana/dashboards/paramserver.json");
    Set<String> metrics = new TreeSet<>();
    for (Map<String, Object> panel : (List<Map<String, Object>>) dashboard.get("panels")) {
      for (Map<String, Object> target :
          (List<Map<String, Object>>) panel.getOrDefault("targets", List.of())) {
        // label names in by (...) / on (...) clauses and in {...} matchers are not metrics
        String expr =
            ((String) target.get("expr"))
                .replaceAll("\\b(by|on|without|ignoring) \\([^)]*\\)", "")
                .replaceAll("\\{[^}]*\\}", "");
        Matcher m = METRIC.matcher(expr);
        while (m.find()) {
          metrics.add(m.group(1));
        }
      }
    }
    assertThat(metrics).as("metrics queried by the dashboard").isNotEmpty();
    return metrics;
  }

  /** Meter names in the services' main sources that use Micrometer, dots as underscores. */
  private static Set<String> registeredPrometheusBases() {
    Set<String> bases = new TreeSet<>();
    for (String module :
        List.of("service-support", "master-service", "pserver-service", "trainer-agent")) {
      Path src = RepoFiles.root().resolve(module).resolve("src/main/java");
      try (Stream<Path> files = Files.walk(src)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          String text = Files.readString(f);
          if (!text.contains("io.micrometer")) {
            continue;
          }
          Matcher m = METER_NAME.matcher(text);
          while (m.find()) {
            bases.add(m.group(1).replace('.', '_'));
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return bases;
  }
}
