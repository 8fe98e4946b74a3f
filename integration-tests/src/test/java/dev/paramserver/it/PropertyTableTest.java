package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The property table of the configuration reference ({@code docs/reference/configuration.md}) is
 * the services' configuration metadata (written by spring-boot-configuration-processor from the
 * properties' javadoc), rendered: this test fails when they differ. Regenerate the table with
 * {@code -Dparamserver.docs.update=true} ({@code -Dparamserver.readme.update=true}, its former
 * name, works too).
 */
class PropertyTableTest {
  static final String BEGIN =
      "<!-- property table: generated from the configuration metadata by PropertyTableTest -->";
  static final String END = "<!-- end of the property table -->";
  private static final Path TABLE_FILE =
      DocsPaths.root().resolve("docs/reference/configuration.md");

  /** Every {@code paramserver.*} property of every service: name to its metadata. */
  static Map<String, JsonNode> metadata() throws Exception {
    ObjectMapper json = new ObjectMapper();
    Map<String, JsonNode> out = new TreeMap<>();
    List<URL> files =
        Collections.list(
            PropertyTableTest.class
                .getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json"));
    for (URL url : files) {
      try (InputStream in = url.openStream()) {
        for (Iterator<JsonNode> it = json.readTree(in).path("properties").iterator();
            it.hasNext(); ) {
          JsonNode p = it.next();
          String name = p.path("name").asString();
          if (name.startsWith("paramserver.")) {
            out.putIfAbsent(name, p);
          }
        }
      }
    }
    return out;
  }

  /** The markdown table: one row per property, by name. */
  static String render(Map<String, JsonNode> properties) {
    List<String> rows = new ArrayList<>();
    rows.add("| property | service | default | meaning |");
    rows.add("| --- | --- | --- | --- |");
    properties.forEach(
        (name, p) ->
            rows.add(
                "| `"
                    + name
                    + "` | "
                    + service(name, p.path("sourceType").asString())
                    + " | "
                    + defaultValue(p.path("defaultValue"))
                    + " | "
                    + cell(p.path("description").asString())
                    + " |"));
    return String.join("\n", rows);
  }

  private static String service(String name, String sourceType) {
    // a service's own key bound through a shared type (paramserver.trainer.s3.* is S3Settings, from
    // the storage library) belongs to that service all the same
    for (String service : new String[] {"master", "pserver", "trainer", "serving"}) {
      if (sourceType.startsWith("dev.paramserver." + service + ".")
          || name.startsWith("paramserver." + service + ".")) {
        return service;
      }
    }
    return "all";
  }

  private static String defaultValue(JsonNode d) {
    if (d.isMissingNode() || d.isNull()) {
      return "";
    }
    if (d.isArray()) {
      List<String> parts = new ArrayList<>();
      d.forEach(e -> parts.add(e.asString()));
      return "`" + String.join(",", parts) + "`";
    }
    return "`" + d.asString() + "`";
  }

  private static String cell(String text) {
    return text.replaceAll("\\{@code ([^}]*)}", "`$1`")
        .replaceAll("\\{@link ([^}]*)}", "$1")
        .replaceAll("\\s+", " ")
        .replace("|", "\\|")
        .strip();
  }

  @Test
  void everyService_hasMetadata() throws Exception {
    Map<String, JsonNode> all = metadata();
    assertThat(all.keySet())
        .anyMatch(n -> n.startsWith("paramserver.etcd."))
        .anyMatch(n -> n.startsWith("paramserver.master."))
        .anyMatch(n -> n.startsWith("paramserver.pserver."))
        .anyMatch(n -> n.startsWith("paramserver.trainer."));
    assertThat(all.values())
        .as("properties without a description (document them in the record's javadoc)")
        .allSatisfy(p -> assertThat(p.path("description").asString()).isNotBlank());
  }

  @Test
  void docsPropertyTable_isTheConfigurationMetadata() throws Exception {
    String table = render(metadata());
    String doc = Files.readString(TABLE_FILE, StandardCharsets.UTF_8);
    int begin = doc.indexOf(BEGIN);
    int end = doc.indexOf(END);
    assertThat(begin).as("%s holds the marker %s", TABLE_FILE, BEGIN).isNotNegative();
    assertThat(end).as("%s holds the marker %s", TABLE_FILE, END).isGreaterThan(begin);
    if (Boolean.getBoolean("paramserver.docs.update")
        || Boolean.getBoolean("paramserver.readme.update")) {
      String updated =
          doc.substring(0, begin + BEGIN.length()) + "\n" + table + "\n" + doc.substring(end);
      Files.writeString(TABLE_FILE, updated, StandardCharsets.UTF_8);
      return;
    }
    assertThat(doc.substring(begin + BEGIN.length(), end).strip())
        .as(
            "property table of docs/reference/configuration.md; regenerate it: ./mvnw -B -pl"
                + " integration-tests -am verify -Dtest=PropertyTableTest"
                + " -Dsurefire.failIfNoSpecifiedTests=false -Dparamserver.docs.update=true")
        .isEqualTo(table);
  }
}
