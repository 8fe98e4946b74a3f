package dev.paramserver.psctl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.PrintWriter;
import picocli.CommandLine.Option;

/**
 * {@code -o, --output text|json} of the commands that print a result ({@code status}, {@code
 * inspect}, {@code evaluate}, {@code version}). The JSON is one pretty-printed object whose fields
 * docs/psctl.md lists; fields are added, never renamed or removed.
 */
public final class OutputFormat {
  /** The formats. */
  public enum Format {
    text,
    json
  }

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FORMAT",
      defaultValue = "text",
      description = "Output format: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  Format format = Format.text;

  /** Whether JSON was asked for. */
  public boolean json() {
    return format == Format.json;
  }

  /** Prints {@code value} (records, maps, lists, JSON trees) as pretty JSON and a line break. */
  public static void printJson(PrintWriter out, Object value) throws JsonProcessingException {
    out.println(JSON.writeValueAsString(value));
    out.flush();
  }
}
