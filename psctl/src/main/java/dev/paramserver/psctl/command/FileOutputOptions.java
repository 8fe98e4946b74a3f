package dev.paramserver.psctl.command;

import picocli.CommandLine.Option;

/**
 * The options every command that writes files ({@code --out}) shares besides {@code --out} itself,
 * whose label and help are the command's: {@code -o FORMAT}, the format of the summary it prints,
 * and the hidden {@code --output}, the old spelling of {@code --out} (deprecated: from the next
 * release {@code --output} is the format, as on the other commands). {@link PsctlCommand#outPath}
 * resolves {@code --out} against {@code --output}.
 */
public final class FileOutputOptions {
  @Option(
      names = "--output",
      hidden = true,
      paramLabel = "PATH",
      description = "The old spelling of --out (deprecated; from the next release the format).")
  String deprecatedOutput;

  @Option(
      names = "-o",
      paramLabel = "FORMAT",
      defaultValue = "table",
      description = OutputFormat.SHORT_DESCRIPTION)
  OutputFormat.Format format;

  /** The deprecated {@code --output}'s value, or null. */
  public String deprecatedOutput() {
    return deprecatedOutput;
  }

  /** The format {@code -o} asked for the summary. */
  public OutputFormat format() {
    return OutputFormat.of(format);
  }
}
