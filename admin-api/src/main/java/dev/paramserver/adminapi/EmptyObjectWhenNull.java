package dev.paramserver.adminapi;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import java.io.IOException;

/**
 * Writes a null object as {@code {}} (the answer's {@code job} before the first sample); the schema
 * allows an empty object there. Use as {@code @JsonSerialize(nullsUsing = ...)} with Jackson 2's
 * annotation, beside {@link Jackson3} with Jackson 3's: the services write the answers with Jackson
 * 3 (Spring Boot 4), clients may read and write them with either.
 */
public final class EmptyObjectWhenNull extends JsonSerializer<Object> {
  @Override
  public void serialize(Object value, JsonGenerator gen, SerializerProvider serializers)
      throws IOException {
    gen.writeStartObject();
    gen.writeEndObject();
  }

  /** The same for Jackson 3. */
  public static final class Jackson3 extends tools.jackson.databind.ValueSerializer<Object> {
    @Override
    public void serialize(
        Object value,
        tools.jackson.core.JsonGenerator gen,
        tools.jackson.databind.SerializationContext context) {
      gen.writeStartObject();
      gen.writeEndObject();
    }
  }
}
