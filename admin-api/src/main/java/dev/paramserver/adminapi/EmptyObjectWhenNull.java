package dev.paramserver.adminapi;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import java.io.IOException;

/**
 * Writes a null object as {@code {}} (the answer's {@code job} before the first sample); the schema
 * allows an empty object there. Use as {@code @JsonSerialize(nullsUsing = ...)}.
 */
public final class EmptyObjectWhenNull extends JsonSerializer<Object> {
  @Override
  public void serialize(Object value, JsonGenerator gen, SerializerProvider serializers)
      throws IOException {
    gen.writeStartObject();
    gen.writeEndObject();
  }
}
