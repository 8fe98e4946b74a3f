package dev.paramserver.adminapi;

import com.fasterxml.jackson.annotation.JsonClassDescription;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.AnnotatedParameterizedType;
import java.lang.reflect.AnnotatedType;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.annotation.JsonSerialize;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The JSON Schema (draft 2020-12) of {@link JobView}, generated from the records: a record is an
 * object with exactly its components as properties, in their order ({@code additionalProperties:
 * false}); a component is required unless it is left out when null ({@code @JsonInclude(NON_NULL)})
 * and may be null only where {@link Nullable}; a null written as {@code {}} ({@link
 * EmptyObjectWhenNull}) may also be an empty object. Descriptions come from {@link
 * JsonPropertyDescription} and {@link JsonClassDescription}. The published schema is the file
 * {@link #RESOURCE} on the classpath; a test fails when it is not what {@link #generate()} gives.
 */
public final class JobViewSchema {
  /** Where the published schema is on the classpath (in this module's jar). */
  public static final String RESOURCE = "/dev/paramserver/adminapi/job-view.schema.json";

  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final ObjectMapper JSON = new ObjectMapper();

  private JobViewSchema() {}

  /** The published schema, as committed. */
  public static String published() {
    try (InputStream in = JobViewSchema.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("no " + RESOURCE + " on the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The schema the records give, pretty-printed as the committed file is. */
  public static String generateText() {
    return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(generate()) + "\n";
  }

  /** The schema the records give. */
  public static ObjectNode generate() {
    ObjectNode root = NODES.objectNode();
    root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
    root.put("title", "GET /admin/job");
    ObjectNode defs = NODES.objectNode();
    root.setAll(object(JobView.class));
    // by name: the order getDeclaredClasses() gives is not specified
    java.util.Arrays.stream(JobView.class.getDeclaredClasses())
        .filter(Class::isRecord)
        .sorted(java.util.Comparator.comparing(Class::getSimpleName))
        .forEach(c -> defs.set(c.getSimpleName(), object(c)));
    root.set("$defs", defs);
    return root;
  }

  private static ObjectNode object(Class<?> record) {
    ObjectNode o = NODES.objectNode();
    JsonClassDescription about = record.getAnnotation(JsonClassDescription.class);
    if (about != null) {
      o.put("description", about.value());
    }
    o.put("type", "object");
    ObjectNode properties = o.putObject("properties");
    ArrayNode required = NODES.arrayNode();
    for (RecordComponent c : record.getRecordComponents()) {
      ObjectNode p = value(c.getAnnotatedType());
      JsonPropertyDescription d = c.getAccessor().getAnnotation(JsonPropertyDescription.class);
      if (d != null) {
        p = prepend("description", d.value(), p);
      }
      JsonSerialize s = c.getAccessor().getAnnotation(JsonSerialize.class);
      if (s != null && s.nullsUsing() == EmptyObjectWhenNull.class) {
        ObjectNode either = NODES.objectNode();
        if (p.has("description")) {
          either.set("description", p.remove("description"));
        }
        ArrayNode any = either.putArray("anyOf");
        any.add(p);
        any.addObject().put("type", "object").put("maxProperties", 0);
        p = either;
      }
      properties.set(c.getName(), p);
      JsonInclude include = c.getAccessor().getAnnotation(JsonInclude.class);
      if (include == null || include.value() == JsonInclude.Include.ALWAYS) {
        required.add(c.getName());
      }
    }
    o.set("required", required);
    o.put("additionalProperties", false);
    return o;
  }

  private static final Map<Class<?>, String> SCALARS =
      Map.ofEntries(
          Map.entry(boolean.class, "boolean"),
          Map.entry(Boolean.class, "boolean"),
          Map.entry(int.class, "integer"),
          Map.entry(Integer.class, "integer"),
          Map.entry(long.class, "integer"),
          Map.entry(Long.class, "integer"),
          Map.entry(double.class, "number"),
          Map.entry(Double.class, "number"),
          Map.entry(String.class, "string"));

  private static final Set<Class<?>> CONTAINERS = Set.of(List.class, Map.class);

  /** The schema of a value of {@code type}. */
  private static ObjectNode value(AnnotatedType type) {
    boolean nullable = type.isAnnotationPresent(Nullable.class);
    Class<?> raw = raw(type);
    ObjectNode v = NODES.objectNode();
    if (SCALARS.containsKey(raw)) {
      if (nullable) {
        v.putArray("type").add(SCALARS.get(raw)).add("null");
      } else {
        v.put("type", SCALARS.get(raw));
      }
      return v;
    }
    if (raw.isRecord()) {
      v.put("$ref", "#/$defs/" + raw.getSimpleName());
    } else if (CONTAINERS.contains(raw) && type instanceof AnnotatedParameterizedType pt) {
      AnnotatedType[] args = pt.getAnnotatedActualTypeArguments();
      if (raw == List.class) {
        v.put("type", "array");
        v.set("items", value(args[0]));
      } else {
        if (raw(args[0]) != String.class) {
          throw new IllegalArgumentException("a map's keys must be strings: " + type);
        }
        v.put("type", "object");
        v.set("additionalProperties", value(args[1]));
      }
    } else {
      throw new IllegalArgumentException("no JSON Schema for the Java type " + type);
    }
    if (!nullable) {
      return v;
    }
    ObjectNode either = NODES.objectNode();
    either.putArray("anyOf").add(v).addObject().put("type", "null");
    return either;
  }

  private static Class<?> raw(AnnotatedType type) {
    java.lang.reflect.Type t = type.getType();
    if (t instanceof Class<?> c) {
      return c;
    }
    if (t instanceof java.lang.reflect.ParameterizedType p) {
      return (Class<?>) p.getRawType();
    }
    throw new IllegalArgumentException("no JSON Schema for the Java type " + t);
  }

  private static ObjectNode prepend(String field, String value, ObjectNode rest) {
    ObjectNode o = NODES.objectNode();
    o.put(field, value);
    o.setAll(rest);
    return o;
  }
}
