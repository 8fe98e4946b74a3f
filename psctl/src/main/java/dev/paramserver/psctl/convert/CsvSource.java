package dev.paramserver.psctl.convert;

import dev.paramserver.proto.v1.Example;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reads a simple CSV file (no quoted delimiters; surrounding quotes and blanks of a field are
 * stripped) into dense examples: one column is the class label, all others are features. The first
 * data line fixes the column count; blank lines are skipped.
 */
final class CsvSource {
  /** Label column: FIRST, LAST or a 0-based index. */
  static final int FIRST = 0;

  static final int LAST = -1;

  private final Path file;
  private final String delimiter;
  private final int labelColumn;
  private final int skipLines;

  CsvSource(Path file, String delimiter, int labelColumn, int skipLines) {
    this.file = file;
    this.delimiter = delimiter;
    this.labelColumn = labelColumn;
    this.skipLines = skipLines;
  }

  /** Parses "first", "last" or a 0-based column number; null when it is none of these. */
  static Integer parseLabelColumn(String text) {
    String t = text.trim().toLowerCase(Locale.ROOT);
    if (t.equals("first")) {
      return FIRST;
    }
    if (t.equals("last")) {
      return LAST;
    }
    try {
      int n = Integer.parseInt(t);
      return n >= 0 ? n : null;
    } catch (NumberFormatException e) {
      return null;
    }
  }

  void read(ExampleSink sink) throws IOException {
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line;
      long lineNo = 0;
      int columns = -1;
      long firstDataLine = 0;
      int label = -1;
      List<String> fields = new ArrayList<>();
      while ((line = in.readLine()) != null) {
        lineNo++;
        if (lineNo == 1 && line.startsWith("\uFEFF")) {
          line = line.substring(1); // UTF-8 byte order mark
        }
        if (lineNo <= skipLines || line.isBlank()) {
          continue;
        }
        split(line, fields);
        if (columns < 0) {
          columns = fields.size();
          firstDataLine = lineNo;
          if (columns < 2) {
            throw new InputFormatException(
                file,
                lineNo,
                "found 1 column with delimiter '"
                    + printable(delimiter)
                    + "': a label and at least one feature are needed (wrong --delimiter?)");
          }
          label = labelColumn == LAST ? columns - 1 : labelColumn;
          if (label >= columns) {
            throw new InputFormatException(
                file,
                lineNo,
                "--label-column "
                    + labelColumn
                    + " is out of range: the line has "
                    + columns
                    + " columns (0.."
                    + (columns - 1)
                    + ")");
          }
        } else if (fields.size() != columns) {
          throw new InputFormatException(
              file,
              lineNo,
              "has "
                  + fields.size()
                  + " columns, expected "
                  + columns
                  + " as on line "
                  + firstDataLine);
        }
        sink.accept(toExample(fields, label, lineNo));
      }
    }
  }

  private Example toExample(List<String> fields, int label, long lineNo) throws IOException {
    Example.Builder b = Example.newBuilder();
    for (int c = 0; c < fields.size(); c++) {
      String f = fields.get(c);
      if (c == label) {
        Integer cls = Labels.classIndex(f);
        if (cls == null) {
          throw new InputFormatException(
              file, lineNo, c, "label '" + f + "' is not a class index (an integer >= 0)");
        }
        b.setLabel(cls);
      } else {
        try {
          b.addDense(Float.parseFloat(f));
        } catch (NumberFormatException e) {
          throw new InputFormatException(file, lineNo, c, "feature '" + f + "' is not a number");
        }
      }
    }
    return b.build();
  }

  private void split(String line, List<String> out) {
    out.clear();
    int start = 0;
    while (true) {
      int i = line.indexOf(delimiter, start);
      String f = i < 0 ? line.substring(start) : line.substring(start, i);
      f = f.strip();
      if (f.length() >= 2 && f.startsWith("\"") && f.endsWith("\"")) {
        f = f.substring(1, f.length() - 1).strip();
      }
      out.add(f);
      if (i < 0) {
        return;
      }
      start = i + delimiter.length();
    }
  }

  private static String printable(String d) {
    return d.replace("\t", "\\t");
  }
}
