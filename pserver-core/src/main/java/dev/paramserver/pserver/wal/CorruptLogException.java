package dev.paramserver.pserver.wal;

import java.nio.file.Path;

/**
 * A write-ahead log segment holds a damaged record with more bytes after it: recovery stops there
 * instead of dropping the records that follow (they may be acknowledged pushes). The message names
 * the file, the offset and what to do.
 */
public final class CorruptLogException extends IllegalStateException {
  private final transient Path file;
  private final long offset;

  CorruptLogException(Path file, long offset, long goodRecords, String what, long size) {
    super(
        "write-ahead log segment "
            + file
            + " is corrupt at byte offset "
            + offset
            + " (record "
            + (goodRecords + 1)
            + ": "
            + what
            + ", "
            + (size - offset)
            + " bytes from there to the end of the file): recovery stops rather than drop the"
            + " records after it; restore the file from a backup, or move it aside to accept"
            + " losing them, then restart");
    this.file = file;
    this.offset = offset;
  }

  public Path file() {
    return file;
  }

  public long offset() {
    return offset;
  }
}
