package dev.paramserver.psctl.convert;

import java.io.IOException;
import java.nio.file.Path;

/** A malformed line of an input file; the message names file, line and (where known) column. */
final class InputFormatException extends IOException {
  private static final long serialVersionUID = 1L;

  InputFormatException(Path file, long line, String what) {
    super(file + " line " + line + ": " + what);
  }

  InputFormatException(Path file, long line, int column, String what) {
    super(file + " line " + line + ", column " + column + " (0-based): " + what);
  }
}
