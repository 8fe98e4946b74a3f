package dev.paramserver.adminapi;

import tools.jackson.core.JsonGenerator;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.ValueSerializer;

/**
 * Writes a null object as {@code {}} (the answer's {@code job} before the first sample); the schema
 * allows an empty object there. Use as {@code @JsonSerialize(nullsUsing = ...)}.
 */
public final class EmptyObjectWhenNull extends ValueSerializer<Object> {
  @Override
  public void serialize(Object value, JsonGenerator gen, SerializationContext context) {
    gen.writeStartObject();
    gen.writeEndObject();
  }
}
