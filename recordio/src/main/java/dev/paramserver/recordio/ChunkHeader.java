package dev.paramserver.recordio;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The decoded 20-byte chunk header (five little-endian uint32: magic, CRC-32 of the stored payload,
 * compressor, stored payload size, record count), plus the offset it was read at.
 *
 * @param offset byte offset of the header in its file
 * @param crc CRC-32 (IEEE) of the payload as stored, as an unsigned value
 * @param compressor how the payload is stored
 * @param payloadSize stored payload size in bytes
 * @param records number of records in the chunk
 */
public record ChunkHeader(
    long offset, long crc, Compressor compressor, long payloadSize, int records) {
  /** Header size in bytes. */
  public static final int SIZE = 20;

  /** The magic number, stored as 04 03 02 01. */
  public static final int MAGIC = 0x01020304;

  /** Length of the chunk including its header. */
  public long chunkLength() {
    return SIZE + payloadSize;
  }

  /** This chunk's location in {@code file}. */
  public ChunkInfo toChunkInfo(Path file) {
    return new ChunkInfo(file, offset, chunkLength(), records);
  }

  /** This chunk's location in the file or object named {@code location}. */
  public ChunkInfo toChunkInfo(String location) {
    return new ChunkInfo(location, offset, chunkLength(), records);
  }

  /** Encodes a header with these values into 20 bytes. */
  static byte[] encode(long crc, Compressor compressor, long payloadSize, int records) {
    ByteBuffer b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC).putInt((int) crc).putInt(compressor.code()).putInt((int) payloadSize);
    b.putInt(records);
    return b.array();
  }

  /**
   * Reads and validates the header at {@code offset}: the magic, a known compressor, a record count
   * that fits in an int, and a payload that fits in the {@code fileSize} bytes of the file.
   */
  static ChunkHeader read(RangeSource ch, long offset, long fileSize) throws IOException {
    if (fileSize - offset < SIZE) {
      throw new CorruptRecordException(
          ch.name(),
          offset,
          "truncated chunk header ("
              + (fileSize - offset)
              + " bytes left, a header needs "
              + SIZE
              + ")");
    }
    String file = ch.name();
    ByteBuffer b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
    readFully(ch, b, offset);
    b.flip();
    int magic = b.getInt();
    if (magic != MAGIC) {
      throw new CorruptRecordException(
          file,
          offset,
          String.format("bad magic 0x%08x (expected 0x%08x)", magic, MAGIC)
              + " - not a RecordIO file or not a chunk boundary");
    }
    long crc = Integer.toUnsignedLong(b.getInt());
    int code = b.getInt();
    Compressor compressor;
    try {
      compressor = Compressor.fromCode(code);
    } catch (IllegalArgumentException e) {
      throw new CorruptRecordException(file, offset, e.getMessage());
    }
    long payloadSize = Integer.toUnsignedLong(b.getInt());
    long records = Integer.toUnsignedLong(b.getInt());
    if (records > Integer.MAX_VALUE) {
      throw new CorruptRecordException(file, offset, "record count " + records + " is too large");
    }
    long left = fileSize - offset - SIZE;
    if (payloadSize > left) {
      throw new CorruptRecordException(
          file,
          offset,
          "truncated chunk: header says "
              + payloadSize
              + " payload bytes but only "
              + left
              + " bytes follow");
    }
    return new ChunkHeader(offset, crc, compressor, payloadSize, (int) records);
  }

  /** Fills {@code b} from {@code position}; a short file is reported as a truncation. */
  static void readFully(RangeSource ch, ByteBuffer b, long position) throws IOException {
    try {
      ch.readFully(b, position);
    } catch (java.io.EOFException e) {
      throw new CorruptRecordException(
          ch.name(),
          position,
          "truncated chunk: file ended before offset " + (position + b.limit()));
    }
  }
}
