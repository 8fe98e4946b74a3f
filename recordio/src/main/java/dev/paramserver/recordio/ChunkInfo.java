package dev.paramserver.recordio;

import java.nio.file.Path;
import java.util.List;

/**
 * Where one chunk lives: the file (a local path, or an object's {@code s3://bucket/key} URI), the
 * byte offset of its header and its length including the 20-byte header, plus its record count.
 * Enough to read the chunk by range with {@link RecordReader#readChunk(ChunkInfo)} or {@link
 * RecordReader#readChunks(List, RangeSource.Opener)}.
 */
public record ChunkInfo(String location, long offset, long length, int records) {
  /** A chunk of a local file. */
  public ChunkInfo(Path file, long offset, long length, int records) {
    this(file.toString(), offset, length, records);
  }

  public ChunkInfo {
    if (offset < 0 || length < ChunkHeader.SIZE || records < 0) {
      throw new IllegalArgumentException(
          "invalid chunk offset="
              + offset
              + " length="
              + length
              + " records="
              + records
              + " of "
              + location);
    }
  }

  /** The file, for a chunk of a local file. */
  public Path file() {
    return Path.of(location);
  }

  /** Bytes of the stored payload (length minus the header). */
  public long payloadLength() {
    return length - ChunkHeader.SIZE;
  }
}
