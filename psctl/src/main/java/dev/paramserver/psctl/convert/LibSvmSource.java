package dev.paramserver.psctl.convert;

import dev.paramserver.proto.v1.Example;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Reads LibSVM / SVMlight files: {@code label idx:val idx:val ...} per line, features into {@code
 * sparse_ids}/{@code sparse_values}. Text after {@code #} is a comment; blank lines and {@code
 * qid:} tokens are ignored. Labels -1 and +1 map to 0 and 1 (binary); other integers >= 0 are kept
 * as class indices.
 */
final class LibSvmSource {
  /** How feature indices are numbered in the file. */
  enum IndexBase {
    ZERO,
    ONE,
    /** 0-based if any index 0 appears in the file, else 1-based (the LibSVM convention). */
    AUTO;

    static IndexBase parse(String s) {
      return switch (s.trim().toLowerCase(Locale.ROOT)) {
        case "0" -> ZERO;
        case "1" -> ONE;
        case "auto" -> AUTO;
        default -> null;
      };
    }
  }

  private final Path file;
  private final IndexBase requested;
  private final int skipLines;
  private IndexBase resolved;

  LibSvmSource(Path file, IndexBase base, int skipLines) {
    this.file = file;
    this.requested = base;
    this.skipLines = skipLines;
  }

  /** The index base used (after auto-detection, once {@link #read} ran). */
  IndexBase indexBase() {
    return resolved;
  }

  void read(ExampleSink sink) throws IOException {
    resolved = requested == IndexBase.AUTO ? detect() : requested;
    long shift = resolved == IndexBase.ONE ? 1 : 0;
    parse(
        (lineNo, e) -> {
          Example.Builder b = e.toBuilder().clearSparseIds();
          for (int i = 0; i < e.getSparseIdsCount(); i++) {
            long id = e.getSparseIds(i) - shift;
            if (id < 0) {
              throw new InputFormatException(
                  file, lineNo, "feature index 0 in a 1-based file (use --index-base 0 or auto)");
            }
            b.addSparseIds(id);
          }
          sink.accept(b.build());
        });
  }

  private IndexBase detect() throws IOException {
    boolean[] zero = new boolean[1];
    parse(
        (lineNo, e) -> {
          for (int i = 0; i < e.getSparseIdsCount() && !zero[0]; i++) {
            zero[0] = e.getSparseIds(i) == 0;
          }
        });
    return zero[0] ? IndexBase.ZERO : IndexBase.ONE;
  }

  private interface LineSink {
    void accept(long lineNo, Example e) throws IOException;
  }

  /** Parses every line with the raw (unshifted) indices. */
  private void parse(LineSink sink) throws IOException {
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line;
      long lineNo = 0;
      while ((line = in.readLine()) != null) {
        lineNo++;
        if (lineNo == 1 && line.startsWith("\uFEFF")) {
          line = line.substring(1); // UTF-8 byte order mark
        }
        int hash = line.indexOf('#');
        if (hash >= 0) {
          line = line.substring(0, hash);
        }
        if (lineNo <= skipLines || line.isBlank()) {
          continue;
        }
        sink.accept(lineNo, parseLine(line.strip().split("\\s+"), lineNo));
      }
    }
  }

  private Example parseLine(String[] tokens, long lineNo) throws IOException {
    Example.Builder b = Example.newBuilder().setLabel(label(tokens[0], lineNo));
    for (int t = 1; t < tokens.length; t++) {
      String tok = tokens[t];
      if (tok.startsWith("qid:")) {
        continue;
      }
      int colon = tok.indexOf(':');
      if (colon <= 0 || colon == tok.length() - 1) {
        throw new InputFormatException(file, lineNo, "token '" + tok + "' is not index:value");
      }
      long idx;
      float val;
      try {
        idx = Long.parseLong(tok.substring(0, colon));
      } catch (NumberFormatException e) {
        idx = -1;
      }
      if (idx < 0) {
        throw new InputFormatException(
            file, lineNo, "feature index in '" + tok + "' is not an integer >= 0");
      }
      try {
        val = Float.parseFloat(tok.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new InputFormatException(
            file, lineNo, "feature value in '" + tok + "' is not a number");
      }
      b.addSparseIds(idx).addSparseValues(val);
    }
    return b.build();
  }

  private int label(String text, long lineNo) throws IOException {
    double v;
    try {
      v = Double.parseDouble(text);
    } catch (NumberFormatException e) {
      throw new InputFormatException(file, lineNo, "label '" + text + "' is not a number");
    }
    if (v == -1) {
      return 0;
    }
    Integer cls = Labels.classIndex(text);
    if (cls == null) {
      throw new InputFormatException(
          file, lineNo, "label '" + text + "' is neither -1/+1 nor a class index (integer >= 0)");
    }
    return cls;
  }
}
