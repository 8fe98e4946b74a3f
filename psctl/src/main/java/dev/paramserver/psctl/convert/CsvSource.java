package dev.paramserver.psctl.convert;

import dev.paramserver.proto.v1.Example;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVRecord;

/**
 * Reads a CSV file with Commons CSV (RFC 4180 quoting, quoted delimiters and line breaks) into
 * dense examples: one column is the class label, all others are features. An optional header row
 * names the columns (so the label column can be given by name); the first data row fixes the column
 * count; blank lines are skipped.
 *
 * <p>Labels are class indices (integers >= 0) when every label is a number; otherwise they are
 * names, mapped to class indices in sorted order (or in the order of a given list, for test data
 * that must use the training data's mapping).
 */
final class CsvSource {
  /** Label column: FIRST, LAST or a 0-based index. */
  static final int FIRST = 0;

  static final int LAST = -1;

  /** Where the label is: a position (FIRST, LAST, index) or a header name. */
  record LabelColumn(int index, String name) {
    /** Parses "first", "last", a 0-based column number, or else a column name. */
    static LabelColumn parse(String text) {
      String t = text.trim();
      String lower = t.toLowerCase(Locale.ROOT);
      if (lower.equals("first")) {
        return new LabelColumn(FIRST, null);
      }
      if (lower.equals("last")) {
        return new LabelColumn(LAST, null);
      }
      try {
        int n = Integer.parseInt(t);
        return n >= 0 ? new LabelColumn(n, null) : null;
      } catch (NumberFormatException e) {
        return t.isEmpty() ? null : new LabelColumn(LAST, t);
      }
    }
  }

  private final Path file;
  private final char delimiter;
  private final LabelColumn labelColumn;
  private final int skipLines;
  private final boolean header;

  private List<String> columnNames = List.of();
  private List<String> labelNames = List.of();
  private int label = -1;

  CsvSource(Path file, char delimiter, LabelColumn labelColumn, int skipLines, boolean header) {
    this.file = file;
    this.delimiter = delimiter;
    this.labelColumn = labelColumn;
    this.skipLines = skipLines;
    this.header = header || labelColumn.name() != null;
  }

  /** The header's column names (empty without a header); valid after {@link #read}. */
  List<String> columnNames() {
    return columnNames;
  }

  /** Class names by index, empty when the labels were indices; valid after {@link #read}. */
  List<String> labelNames() {
    return labelNames;
  }

  /** The 0-based label column; valid after {@link #read}. */
  int labelIndex() {
    return label;
  }

  /**
   * Reads the file twice: once for the labels (to decide between indices and names), once to
   * convert.
   *
   * @param givenNames the class names to map labels to (from the training data), or empty to derive
   *     them from this file
   */
  void read(List<String> givenNames, ExampleSink sink) throws IOException {
    TreeSet<String> labels = new TreeSet<>();
    boolean allNumbers = true;
    try (RowIterator rows = new RowIterator()) {
      while (rows.hasNext()) {
        Row row = rows.next();
        String v = row.fields.get(label);
        if (v.isEmpty()) {
          throw new InputFormatException(
              file, row.line, label, "the label" + column(label) + " is missing");
        }
        labels.add(v);
        allNumbers &= isNumber(v);
      }
    }
    boolean names = !givenNames.isEmpty() || !allNumbers;
    labelNames =
        !givenNames.isEmpty() ? List.copyOf(givenNames) : names ? List.copyOf(labels) : List.of();
    try (RowIterator rows = new RowIterator()) {
      while (rows.hasNext()) {
        sink.accept(toExample(rows.next(), names));
      }
    }
  }

  private record Row(List<String> fields, long line) {}

  private final class RowIterator implements AutoCloseable {
    private final BufferedReader in;
    private final CSVParser parser;
    private final Iterator<CSVRecord> records;
    private int columns = -1;
    private long firstDataLine;
    private long linesBefore;
    private Row next;

    RowIterator() throws IOException {
      in = Files.newBufferedReader(file, StandardCharsets.UTF_8);
      in.mark(1);
      if (in.read() != '\uFEFF') {
        in.reset(); // no UTF-8 byte order mark
      }
      for (int i = 0; i < skipLines && in.readLine() != null; i++) {
        linesBefore++;
      }
      CSVFormat format =
          CSVFormat.RFC4180
              .builder()
              .setDelimiter(delimiter)
              .setIgnoreEmptyLines(true)
              .setIgnoreSurroundingSpaces(true)
              .get();
      parser = CSVParser.builder().setReader(in).setFormat(format).get();
      records = parser.iterator();
      try {
        advance(true);
      } catch (IOException | RuntimeException e) {
        parser.close();
        throw e;
      }
    }

    boolean hasNext() {
      return next != null;
    }

    Row next() throws IOException {
      Row r = next;
      advance(false);
      return r;
    }

    private void advance(boolean first) throws IOException {
      next = null;
      while (records.hasNext()) {
        CSVRecord rec;
        try {
          rec = records.next();
        } catch (UncheckedIOException e) {
          close();
          throw new InputFormatException(
              file, linesBefore + parser.getCurrentLineNumber(), e.getCause().getMessage());
        }
        long line = linesBefore + parser.getCurrentLineNumber();
        List<String> fields = new ArrayList<>(rec.size());
        rec.forEach(f -> fields.add(f.strip()));
        if (fields.size() == 1 && fields.get(0).isEmpty()) {
          continue; // a line of blanks
        }
        if (first && columns < 0 && (header || looksLikeHeader(fields))) {
          columnNames = List.copyOf(fields);
          columns = fields.size();
          firstDataLine = line;
          resolveLabel(line);
          continue;
        }
        if (columns < 0) {
          columns = fields.size();
          firstDataLine = line;
          resolveLabel(line);
        } else if (fields.size() != columns) {
          close();
          throw new InputFormatException(
              file,
              line,
              "has "
                  + fields.size()
                  + " columns, expected "
                  + columns
                  + " as on line "
                  + firstDataLine);
        }
        next = new Row(fields, line);
        return;
      }
      close();
    }

    private void resolveLabel(long line) throws IOException {
      if (columns < 2) {
        close();
        throw new InputFormatException(
            file,
            line,
            "found 1 column with delimiter '"
                + (delimiter == '\t' ? "\\t" : String.valueOf(delimiter))
                + "': a label and at least one feature are needed (wrong --delimiter?)");
      }
      if (labelColumn.name() != null) {
        label = columnNames.indexOf(labelColumn.name());
        if (label < 0) {
          close();
          throw new InputFormatException(
              file,
              line,
              "--label-column '"
                  + labelColumn.name()
                  + "' is not a column of the header "
                  + columnNames);
        }
        return;
      }
      label = labelColumn.index() == LAST ? columns - 1 : labelColumn.index();
      if (label >= columns) {
        close();
        throw new InputFormatException(
            file,
            line,
            "--label-column "
                + labelColumn.index()
                + " is out of range: the line has "
                + columns
                + " columns (0.."
                + (columns - 1)
                + ")");
      }
    }

    @Override
    public void close() throws IOException {
      parser.close();
    }
  }

  /** A first row none of whose fields is a number is taken for a header. */
  private static boolean looksLikeHeader(List<String> fields) {
    for (String f : fields) {
      if (f.isEmpty() || isNumber(f)) {
        return false;
      }
    }
    return true;
  }

  private static boolean isNumber(String f) {
    try {
      Float.parseFloat(f);
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private Example toExample(Row row, boolean names) throws IOException {
    Example.Builder b = Example.newBuilder();
    List<String> fields = row.fields;
    for (int c = 0; c < fields.size(); c++) {
      String f = fields.get(c);
      if (c == label) {
        b.setLabel(classOf(f, names, row.line, c));
        continue;
      }
      if (f.isEmpty()) {
        throw new InputFormatException(file, row.line, c, "the value" + column(c) + " is missing");
      }
      float v;
      try {
        v = Float.parseFloat(f);
      } catch (NumberFormatException e) {
        throw new InputFormatException(
            file, row.line, c, "feature" + column(c) + " '" + f + "' is not a number");
      }
      if (!Float.isFinite(v)) {
        throw new InputFormatException(
            file, row.line, c, "feature" + column(c) + " '" + f + "' is not a finite number");
      }
      b.addDense(v);
    }
    return b.build();
  }

  private int classOf(String f, boolean names, long line, int c) throws IOException {
    if (f.isEmpty()) {
      throw new InputFormatException(file, line, c, "the label" + column(c) + " is missing");
    }
    if (names) {
      int k = labelNames.indexOf(f);
      if (k < 0) {
        throw new InputFormatException(
            file,
            line,
            c,
            "label '" + f + "' is not one of the training data's classes " + labelNames);
      }
      return k;
    }
    Integer cls = Labels.classIndex(f);
    if (cls == null) {
      throw new InputFormatException(
          file, line, c, "label '" + f + "' is not a class index (an integer >= 0)");
    }
    return cls;
  }

  private String column(int c) {
    return c < columnNames.size() ? " '" + columnNames.get(c) + "'" : "";
  }
}
