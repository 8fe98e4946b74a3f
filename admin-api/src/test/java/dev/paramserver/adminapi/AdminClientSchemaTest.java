package dev.paramserver.adminapi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.testsupport.JsonSchemaCheck;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The admin client's view of {@code GET /admin/job} and the published schema cannot drift: an
 * answer built from the published schema alone, with every property it names, is read by the
 * client's records without an unknown field and written back unchanged. A field the schema gains
 * that the records lack fails the strict read; one the records gain fails the round trip.
 */
class AdminClientSchemaTest {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  @Test
  void anAnswerWithEveryPublishedField_roundTripsThroughTheClientsView() throws Exception {
    ObjectMapper json = new ObjectMapper();
    JsonNode schema = json.readTree(JobViewSchema.published());
    JsonNode full = instance(schema, schema);
    assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(full)).isEmpty();

    ObjectMapper strict =
        AdminClient.json()
            .rebuild()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();
    JobView view = strict.treeToValue(full, JobView.class);
    // through text, so int and long fields compare alike
    assertThat(json.readTree(json.writeValueAsString(view)))
        .isEqualTo(json.readTree(json.writeValueAsString(full)));
    assertThat(view.job().state()).isEqualTo("s");
  }

  /** A value for {@code node}: every property present, the first type of a union. */
  private static JsonNode instance(JsonNode node, JsonNode root) {
    if (node.has("$ref")) {
      String name = node.get("$ref").asString().substring("#/$defs/".length());
      return instance(root.get("$defs").get(name), root);
    }
    if (node.has("anyOf")) {
      return instance(node.get("anyOf").get(0), root);
    }
    JsonNode type = node.path("type");
    String t = type.isArray() ? type.get(0).asString() : type.asString();
    switch (t) {
      case "object" -> {
        ObjectNode o = NODES.objectNode();
        if (node.has("properties")) {
          for (Map.Entry<String, JsonNode> p : node.get("properties").properties()) {
            o.set(p.getKey(), instance(p.getValue(), root));
          }
        } else if (node.path("additionalProperties").isObject()) {
          o.set("k", instance(node.get("additionalProperties"), root));
        }
        return o;
      }
      case "array" -> {
        ArrayNode a = NODES.arrayNode();
        a.add(instance(node.get("items"), root));
        return a;
      }
      case "string" -> {
        return NODES.textNode("s");
      }
      case "integer" -> {
        return NODES.numberNode(2L);
      }
      case "number" -> {
        return NODES.numberNode(0.5);
      }
      case "boolean" -> {
        return NODES.booleanNode(true);
      }
      default -> throw new AssertionError("no instance for the schema " + node);
    }
  }
}
