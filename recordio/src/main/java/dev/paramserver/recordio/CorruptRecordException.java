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

  private final transient Path file;
  private final long offset;

  public CorruptRecordException(Path file, long offset, String what) {
    this(file, offset, what, null);
  }

  public CorruptRecordException(Path file, long offset, String what, Throwable cause) {
    super(what + " at offset " + offset + " of " + file, cause);
    this.file = file;
    this.offset = offset;
  }

  /** The file concerned. */
  public Path file() {
    return file;
  }

  /** Byte offset of the chunk header (or the position) where the problem was found. */
  public long offset() {
    return offset;
  }
}
