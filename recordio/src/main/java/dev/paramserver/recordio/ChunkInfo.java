package dev.paramserver.recordio;

import java.nio.file.Path;

/**
 * Where one chunk lives: the file, the byte offset of its header and its length including the
 * 20-byte header, plus its record count. Enough to read the chunk by range with {@link
 * RecordReader#readChunk(ChunkInfo)}.
 */
public record ChunkInfo(Path file, long offset, long length, int records) {
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
              + file);
    }
  }

  /** Bytes of the stored payload (length minus the header). */
  public long payloadLength() {
    return length - ChunkHeader.SIZE;
  }
}
