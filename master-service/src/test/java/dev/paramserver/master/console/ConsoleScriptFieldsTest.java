package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.JobViewSchema;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The console's JavaScript reads only fields of the published {@code /admin/job} schema: in each
 * function of {@code console.js}, a variable typed by a JSDoc {@code @param {Type} name} (a type of
 * the schema: {@code JobView}, a {@code $defs} name, or an array of one), or assigned from a typed
 * one ({@code const j = v.job}), or an element of a typed array ({@code for (const p of list)},
 * {@code list.map((q) => ...)}), is followed through every {@code name.field.field} it reads; a
 * field the schema does not have fails the test.
 */
class ConsoleScriptFieldsTest {
  private static final Pattern FUNCTION =
      Pattern.compile("(?m)^(?:\\s*/\\*\\*[^\\n]*\\*/\\n)?\\s*(?:async\\s+)?function\\s+\\w+\\(");
  private static final Pattern PARAM = Pattern.compile("@param \\{(\\w+)(\\[])?} (\\w+)");
  private static final Pattern ASSIGN =
      Pattern.compile("\\b(?:const|let)\\s+(\\w+)\\s*=\\s*(\\w+(?:\\.\\w+)+)");
  private static final Pattern FOR_OF = Pattern.compile("for \\(const (\\w+) of (\\w+)\\b");
  private static final Pattern LAMBDA =
      Pattern.compile("\\b(\\w+)\\.(?:map|filter|forEach|some|every|find)\\(\\(?(\\w+)\\)?\\s*=>");
  private static final Pattern CHAIN =
      Pattern.compile("(?<![\\w$.])([A-Za-z_$][\\w$]*)((?:\\.[A-Za-z_$][\\w$]*)+)");
  private static final Set<String> ARRAY_MEMBERS =
      Set.of(
          "length",
          "map",
          "filter",
          "slice",
          "forEach",
          "reverse",
          "concat",
          "join",
          "some",
          "every",
          "find",
          "includes",
          "indexOf");

  private final JsonNode schema;

  ConsoleScriptFieldsTest() throws IOException {
    schema = new ObjectMapper().readTree(JobViewSchema.published());
  }

  private static String script() throws IOException {
    try (InputStream in = ConsoleScriptFieldsTest.class.getResourceAsStream("/static/console.js")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void everyFieldTheConsoleReadsIsInTheSchema() throws IOException {
    List<String> read = new ArrayList<>();
    List<String> unknown = new ArrayList<>();
    check(script(), read, unknown);
    assertThat(unknown)
        .as("fields console.js reads that /admin/job/schema does not have")
        .isEmpty();
    // the scan found the reads (it did not silently match nothing)
    assertThat(read)
        .hasSizeGreaterThan(60)
        .contains(
            "JobView.job",
            "Job.tasks",
            "Tasks.todo",
            "Pass.testLoss",
            "Pserver.sparseRows",
            "Trainer.lagSeconds",
            "Event.message",
            "Series.trainLoss",
            "JobView.scaling",
            "Scaling.moves",
            "Move.stallMs");
  }

  @Test
  void aFieldTheSchemaDoesNotHave_isFound() throws IOException {
    List<String> unknown = new ArrayList<>();
    String broken =
        script()
            .replace("cell(tr, fmt(p.step));", "cell(tr, fmt(p.steps));")
            .replace("const j = v.job || {};", "const j = v.jobs || {};");
    check(broken, new ArrayList<>(), unknown);
    assertThat(unknown).anyMatch(u -> u.contains("p.steps")).anyMatch(u -> u.contains("v.jobs"));
  }

  /**
   * Adds each field read to {@code read} ("Type.field") and each unknown one to {@code unknown}.
   */
  private void check(String js, List<String> read, List<String> unknown) {
    Matcher f = FUNCTION.matcher(js);
    List<Integer> starts = new ArrayList<>();
    while (f.find()) {
      starts.add(f.start());
    }
    starts.add(js.length());
    assertThat(starts).as("functions in console.js").hasSizeGreaterThan(10);
    for (int i = 0; i + 1 < starts.size(); i++) {
      checkFunction(js.substring(starts.get(i), starts.get(i + 1)), read, unknown);
    }
  }

  private void checkFunction(String chunk, List<String> read, List<String> unknown) {
    Map<String, JsonNode> types = new HashMap<>();
    Matcher m = PARAM.matcher(chunk);
    while (m.find()) {
      JsonNode t = "JobView".equals(m.group(1)) ? schema : schema.path("$defs").get(m.group(1));
      if (t == null) {
        unknown.add("@param {" + m.group(1) + "}: not a type of the schema");
        continue;
      }
      types.put(m.group(3), m.group(2) == null ? t : arrayOf(t));
    }
    String code = withoutStringsAndComments(chunk);
    // typed by assignment or as an element, in the order written
    boolean more = true;
    while (more) {
      more = false;
      for (Matcher a = ASSIGN.matcher(code); a.find(); ) {
        if (!types.containsKey(a.group(1))) {
          JsonNode t = resolve(a.group(2), types, null, null);
          if (t != null) {
            types.put(a.group(1), t);
            more = true;
          }
        }
      }
      for (Pattern p : List.of(FOR_OF, LAMBDA)) {
        for (Matcher a = p.matcher(code); a.find(); ) {
          String array = p == FOR_OF ? a.group(2) : a.group(1);
          String element = p == FOR_OF ? a.group(1) : a.group(2);
          JsonNode t = types.get(array);
          if (t != null && !types.containsKey(element) && items(t) != null) {
            types.put(element, items(t));
            more = true;
          }
        }
      }
    }
    for (Matcher c = CHAIN.matcher(code); c.find(); ) {
      if (types.containsKey(c.group(1))) {
        resolve(c.group(1) + c.group(2), types, read, unknown);
      }
    }
  }

  /**
   * The type at {@code path} ("v.job.tasks"), or null when its first name is not typed or a field
   * is unknown (then added to {@code unknown}).
   */
  private JsonNode resolve(
      String path, Map<String, JsonNode> types, List<String> read, List<String> unknown) {
    String[] names = path.split("\\.");
    JsonNode t = types.get(names[0]);
    for (int i = 1; t != null && i < names.length; i++) {
      JsonNode o = object(t);
      if (o == null) {
        boolean array = items(t) != null;
        if (array && !ARRAY_MEMBERS.contains(names[i]) && unknown != null) {
          unknown.add(path + ": '" + names[i] + "' of an array");
        }
        // a member of a number or a string (toFixed...) or of an array: no more fields
        return null;
      }
      JsonNode field = o.path("properties").get(names[i]);
      if (field == null) {
        if (o.path("additionalProperties").isObject()) {
          return null; // a map (sparseRows): any key
        }
        if (unknown != null) {
          unknown.add(path + ": no field '" + names[i] + "' in " + name(o));
        }
        return null;
      }
      if (read != null) {
        read.add(name(o) + "." + names[i]);
      }
      t = field;
    }
    return t;
  }

  /** The object schema {@code t} is (through $ref and the alternatives of anyOf), or null. */
  private JsonNode object(JsonNode t) {
    t = deref(t);
    if (t.has("anyOf")) {
      for (JsonNode alt : t.get("anyOf")) {
        JsonNode o = object(alt);
        if (o != null && o.path("properties").size() > 0) {
          return o;
        }
      }
      return null;
    }
    return "object".equals(t.path("type").asString("")) ? t : null;
  }

  /** The items' schema of an array schema {@code t}, or null. */
  private JsonNode items(JsonNode t) {
    t = deref(t);
    return t.has("items") ? t.get("items") : null;
  }

  private JsonNode deref(JsonNode t) {
    while (t.has("$ref")) {
      t = schema.path("$defs").path(t.get("$ref").asString().replace("#/$defs/", ""));
    }
    return t;
  }

  private String name(JsonNode object) {
    if (object == schema) {
      return "JobView";
    }
    for (Map.Entry<String, JsonNode> d : schema.path("$defs").properties()) {
      if (d.getValue() == object) {
        return d.getKey();
      }
    }
    return "?";
  }

  private static JsonNode arrayOf(JsonNode t) {
    return new ObjectMapper().createObjectNode().put("type", "array").set("items", t);
  }

  /** The code with string literals emptied and comments removed (a '.' there is no field). */
  static String withoutStringsAndComments(String js) {
    // strings first: "//" in 'http://' is no comment
    return js.replaceAll("'(?:[^'\\\\\\n]|\\\\.)*'", "''")
        .replaceAll("\"(?:[^\"\\\\\\n]|\\\\.)*\"", "\"\"")
        .replaceAll("(?s)/\\*.*?\\*/", " ")
        .replaceAll("(?m)//.*$", " ");
  }
}
