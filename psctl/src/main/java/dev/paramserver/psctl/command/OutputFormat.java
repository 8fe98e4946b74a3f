package dev.paramserver.psctl.command;

import java.io.PrintWriter;
import picocli.CommandLine.Option;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.dataformat.yaml.YAMLMapper;
import tools.jackson.dataformat.yaml.YAMLWriteFeature;

/**
 * {@code -o, --output table|json|yaml} of every command that prints a result: {@code table} (the
 * default) is the text for people, {@code json} one pretty-printed object whose fields
 * docs/psctl.md lists (fields are added, never renamed or removed), {@code yaml} the same object as
 * YAML. {@code text} is the old name of {@code table}, still accepted.
 */
public final class OutputFormat {
  /** The formats. */
  public enum Format {
    table,
    json,
    yaml,
    /** The old name of {@link #table}. */
    text
  }

  /** The JSON writer, made at its first use: a table needs none (a quick command's start). */
  private static final class Json {
    static final ObjectMapper MAPPER =
        JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
  }

  /** The YAML writer, made at its first use. */
  private static final class Yaml {
    static final ObjectMapper MAPPER =
        YAMLMapper.builder()
            .disable(YAMLWriteFeature.WRITE_DOC_START_MARKER)
            .enable(YAMLWriteFeature.MINIMIZE_QUOTES)
            .build();
  }

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FORMAT",
      defaultValue = "table",
      description = "Output format: table, json or yaml (default: ${DEFAULT-VALUE}).")
  Format format = Format.table;

  /** The help of {@code -o FORMAT} on the commands that write files ({@code --out}). */
  public static final String SHORT_DESCRIPTION =
      "Output format of the summary: table, json or yaml (default: ${DEFAULT-VALUE}).";

  /** The format {@code format}, for the commands that declare {@code -o} themselves. */
  public static OutputFormat of(Format format) {
    OutputFormat f = new OutputFormat();
    f.format = format == null ? Format.table : format;
    return f;
  }

  /** Whether JSON was asked for. */
  public boolean json() {
    return format == Format.json;
  }

  /** Whether a structured format (JSON or YAML) was asked for rather than the table. */
  public boolean structured() {
    return format == Format.json || format == Format.yaml;
  }

  /** Prints {@code value} (records, maps, lists, JSON trees) in the format asked for. */
  public void print(PrintWriter out, Object value) throws JacksonException {
    if (format == Format.yaml) {
      out.print(Yaml.MAPPER.writeValueAsString(value));
      out.flush();
    } else {
      printJson(out, value);
    }
  }

  /** Prints {@code value} (records, maps, lists, JSON trees) as pretty JSON and a line break. */
  public static void printJson(PrintWriter out, Object value) throws JacksonException {
    out.println(Json.MAPPER.writeValueAsString(value));
    out.flush();
  }

  /** {@code value} as one line of JSON (a stream of them is JSON Lines). */
  public static String jsonLine(Object value) throws JacksonException {
    return new ObjectMapper().writeValueAsString(value);
  }
}
