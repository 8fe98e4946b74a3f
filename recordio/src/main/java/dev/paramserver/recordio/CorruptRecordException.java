package dev.paramserver.recordio;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A RecordIO file is not well formed. The message names what is wrong, the byte offset of the chunk
 * (or header) concerned and the file, e.g. {@code "bad magic 0x05060708 (expected 0x01020304) at
 * offset 1234 of /data/a.recordio"}.
 */
public class CorruptRecordException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String source;
  private final long offset;

  public CorruptRecordException(Path file, long offset, String what) {
    this(file.toString(), offset, what, null);
  }

  public CorruptRecordException(Path file, long offset, String what, Throwable cause) {
    this(file.toString(), offset, what, cause);
  }

  public CorruptRecordException(String source, long offset, String what) {
    this(source, offset, what, null);
  }

  /**
   * @param source the file or object ({@code s3://bucket/key}) concerned
   */
  public CorruptRecordException(String source, long offset, String what, Throwable cause) {
    super(what + " at offset " + offset + " of " + source, cause);
    this.source = source;
    this.offset = offset;
  }

  /** The file concerned (for a local file). */
  public Path file() {
    return Path.of(source);
  }

  /** The file or object concerned, as named when it was opened. */
  public String source() {
    return source;
  }

  /** Byte offset of the chunk header (or the position) where the problem was found. */
  public long offset() {
    return offset;
  }
}
