package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The Helm chart's templates and values agree with the services. */
class HelmConsistencyTest {
  private static final String CHART = "helm/paramserver/";
  private static final Pattern PROPERTY_LINE =
      Pattern.compile("^\\s*(paramserver\\.[a-z0-9.-]*[a-z0-9])=", Pattern.MULTILINE);
  private static final Pattern PREFIXED_EXTRA =
      Pattern.compile(
          "^\\s*paramserver\\.(master|pserver|trainer|serving)\\.\\{\\{ \\$k \\}\\}=",
          Pattern.MULTILINE);

  private final Map<String, Object> values = RepoFiles.yaml(CHART + "values.yaml");

  /** The properties file of one role: its define in templates/_properties.tpl. */
  private static String configMapSection(ServiceRole role) {
    String text = define("paramserver." + role.name().toLowerCase() + "Properties");
    assertThat(RepoFiles.read(CHART + "templates/configmap.yaml"))
        .contains("include \"paramserver." + role.name().toLowerCase() + "Properties\"");
    return text;
  }

  /** The body of a define of _helpers.tpl or _properties.tpl. */
  private static String define(String name) {
    for (String file : List.of("_helpers.tpl", "_properties.tpl")) {
      String text = RepoFiles.read(CHART + "templates/" + file);
      int start = text.indexOf("{{- define \"" + name + "\" -}}");
      if (start >= 0) {
        return text.substring(start, text.indexOf("{{- end }}\n\n", start));
      }
    }
    throw new AssertionError("no define " + name + " in _helpers.tpl or _properties.tpl");
  }

  private static List<String> properties(String text) {
    List<String> out = new ArrayList<>();
    Matcher m = PROPERTY_LINE.matcher(text);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> values(String key) {
    return (Map<String, Object>) values.get(key);
  }

  @Test
  void everyPropertyInTheConfigMap_isBoundByTheRoleThatReadsIt() {
    List<String> common = properties(define("paramserver.commonProperties"));
    assertThat(common).contains("paramserver.job", "paramserver.etcd.endpoints");
    List<String> unknown = new ArrayList<>();
    for (ServiceRole role : ServiceRole.values()) {
      List<String> props = new ArrayList<>(properties(configMapSection(role)));
      props.addAll(common);
      for (String p : props) {
        if (!role.properties().contains(p)) {
          unknown.add(role.module + ": " + p);
        }
      }
    }
    assertThat(unknown).as("properties no @ConfigurationProperties record binds").isEmpty();
  }

  @Test
  void extraPropertiesOfEachRole_arePrefixedWithTheRolesPrefix() {
    for (ServiceRole role : ServiceRole.values()) {
      Matcher m = PREFIXED_EXTRA.matcher(configMapSection(role));
      assertThat(m.find()).as(role + " extraProperties line").isTrue();
      assertThat(m.group(1)).isEqualTo(role.name().toLowerCase());
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void extraPropertiesOfTheCiValues_exist() {
    Map<String, Object> ci = RepoFiles.yaml(CHART + "ci/external-values.yaml");
    List<String> unknown = new ArrayList<>();
    for (ServiceRole role : ServiceRole.values()) {
      String key = role.name().toLowerCase();
      Map<String, Object> section = (Map<String, Object>) ci.getOrDefault(key, Map.of());
      Map<String, Object> extra =
          (Map<String, Object>) section.getOrDefault("extraProperties", Map.of());
      for (String k : extra.keySet()) {
        String property = "paramserver." + key + "." + k;
        if (!role.properties().contains(property)) {
          unknown.add(property);
        }
      }
    }
    assertThat(unknown).isEmpty();
  }

  @Test
  void portValues_equalTheServicesDefaults_andAreWiredToServerAndContainerPorts() {
    for (ServiceRole role : ServiceRole.values()) {
      String key = role.name().toLowerCase();
      Map<String, Object> v = values(key);
      assertThat(v.get("httpPort")).as(key + ".httpPort").isEqualTo(role.httpPort());
      String section = configMapSection(role);
      assertThat(section).contains("server.port={{ .Values." + key + ".httpPort }}");
      String workload = RepoFiles.read(CHART + "templates/" + key + ".yaml");
      assertThat(workload).contains("containerPort: {{ .Values." + key + ".httpPort }}");
      if (role.grpcPort().isPresent()) {
        assertThat(v.get("grpcPort")).as(key + ".grpcPort").isEqualTo(role.grpcPort().getAsInt());
        assertThat(section).contains("spring.grpc.server.port={{ .Values." + key + ".grpcPort }}");
        assertThat(workload).contains("containerPort: {{ .Values." + key + ".grpcPort }}");
      } else {
        assertThat(v).as(key + " has no gRPC server").doesNotContainKey("grpcPort");
      }
    }
  }

  @Test
  void environmentVariablesOfTheTemplates_bindCommonOrRoleProperties() {
    Pattern envName = Pattern.compile("- name: (PARAMSERVER_[A-Z0-9_]+)");
    List<String> unknown = new ArrayList<>();
    for (ServiceRole role : ServiceRole.values()) {
      String helpers = RepoFiles.read(CHART + "templates/_helpers.tpl");
      if (role == ServiceRole.SERVING) {
        // its container's env has "noS3": a serving replica reads no object store
        assertThat(RepoFiles.read(CHART + "templates/serving.yaml")).contains("\"noS3\" true");
        helpers = helpers.replace(define("paramserver.s3Env"), "");
      }
      String text =
          helpers + RepoFiles.read(CHART + "templates/" + role.name().toLowerCase() + ".yaml");
      Matcher m = envName.matcher(text);
      while (m.find()) {
        if (!role.bindsEnv(m.group(1)) && !role.readsPlaceholder(m.group(1))) {
          unknown.add(role.module + ": " + m.group(1));
        }
      }
    }
    assertThat(unknown).isEmpty();
    assertThat(define("paramserver.env"))
        .contains("PARAMSERVER_ADVERTISE_HOST")
        .contains("fieldPath: status.podIP")
        .contains("PARAMSERVER_ADMIN_TOKEN")
        .contains("secretKeyRef");
  }

  @Test
  void probes_useTheActuatorLivenessAndReadinessGroups() {
    String probes = define("paramserver.probes");
    Map<String, String> paths = new LinkedHashMap<>();
    Matcher m =
        Pattern.compile("(startupProbe|livenessProbe|readinessProbe):\\s+httpGet:\\s+path: (\\S+)")
            .matcher(probes);
    while (m.find()) {
      paths.put(m.group(1), m.group(2));
    }
    assertThat(paths)
        .containsEntry("startupProbe", "/actuator/health/liveness")
        .containsEntry("livenessProbe", "/actuator/health/liveness")
        .containsEntry("readinessProbe", "/actuator/health/readiness");
    for (ServiceRole role : ServiceRole.values()) {
      assertThat(RepoFiles.read(CHART + "templates/" + role.name().toLowerCase() + ".yaml"))
          .as(role + " uses the shared probes")
          .contains("include \"paramserver.probes\"");
    }
    assertThat(RepoFiles.read(CHART + "templates/servicemonitor.yaml"))
        .contains("path: /actuator/prometheus");
  }

  @Test
  void everyValue_isDocumentedByAComment() {
    List<String> undocumented = new ArrayList<>();
    String[] lines = RepoFiles.read(CHART + "values.yaml").split("\n");
    checkDocumented(lines, 0, -1, undocumented);
    assertThat(undocumented).as("values.yaml keys without a comment").isEmpty();
  }

  /**
   * A key is documented by the comment line right above it; a key without one must be a map whose
   * keys are all documented. Keys below a documented key are covered by its comment.
   */
  private static int checkDocumented(String[] lines, int from, int parentIndent, List<String> out) {
    int i = from;
    while (i < lines.length) {
      String line = lines[i];
      int indent = line.length() - line.stripLeading().length();
      if (line.isBlank() || line.stripLeading().startsWith("#")) {
        i++;
        continue;
      }
      if (indent <= parentIndent) {
        return i;
      }
      boolean documented = i > 0 && lines[i - 1].stripLeading().startsWith("#");
      boolean hasChildren = line.stripTrailing().endsWith(":");
      int next = skipChildren(lines, i + 1, indent);
      if (!documented) {
        if (hasChildren) {
          checkDocumented(lines, i + 1, indent, out);
        } else {
          out.add((i + 1) + ": " + line.strip());
        }
      }
      i = next;
    }
    return i;
  }

  private static int skipChildren(String[] lines, int from, int indent) {
    int i = from;
    while (i < lines.length) {
      String line = lines[i];
      if (!line.isBlank()
          && line.length() - line.stripLeading().length() <= indent
          && !line.stripLeading().startsWith("#")) {
        return i;
      }
      i++;
    }
    return i;
  }
}
