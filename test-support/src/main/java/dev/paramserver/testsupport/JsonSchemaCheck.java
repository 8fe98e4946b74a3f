package dev.paramserver.testsupport;

import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.util.List;
import tools.jackson.databind.JsonNode;

/** Validates JSON against a JSON Schema (draft 2020-12 unless the schema names another). */
public final class JsonSchemaCheck {
  private final Schema schema;

  private JsonSchemaCheck(Schema schema) {
    this.schema = schema;
  }

  /** A check against the schema {@code schemaJson} (the schema's text). */
  public static JsonSchemaCheck of(String schemaJson) {
    return new JsonSchemaCheck(
        SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12)
            .getSchema(schemaJson));
  }

  /** What in {@code json} the schema rejects, one line each ("$.pservers[0].hot: ..."); none. */
  public List<String> errors(JsonNode json) {
    return schema.validate(json).stream().map(Error::toString).toList();
  }
}
