package dev.paramserver.testsupport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Reads a TFRecord file (a TensorBoard event file) back, checking its framing on its own: each
 * record is {@code uint64 length, uint32 masked CRC-32C of the length, data, uint32 masked CRC-32C
 * of the data}, little-endian, the CRCs masked as TensorFlow does (rotate right by 15 bits, add
 * 0xa282ead8).
 */
public final class TfRecords {
  private TfRecords() {}

  /**
   * The records' data, in order.
   *
   * @throws IllegalStateException naming the record when a CRC is wrong or the file is cut short
   */
  public static List<byte[]> read(Path file) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
    List<byte[]> out = new ArrayList<>();
    while (b.hasRemaining()) {
      int at = b.position();
      if (b.remaining() < 12) {
        throw new IllegalStateException(file + ": record at byte " + at + " is cut short");
      }
      byte[] len = new byte[8];
      b.get(len);
      long length = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getLong();
      check(file, at, "length", b.getInt(), maskedCrc32c(len));
      if (length < 0 || length > b.remaining() - 4) {
        throw new IllegalStateException(file + ": record at byte " + at + " is cut short");
      }
      byte[] data = new byte[(int) length];
      b.get(data);
      check(file, at, "data", b.getInt(), maskedCrc32c(data));
      out.add(data);
    }
    return out;
  }

  /** TensorFlow's masked CRC-32C of {@code bytes}. */
  public static int maskedCrc32c(byte[] bytes) {
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, bytes.length);
    int c = (int) crc.getValue();
    return Integer.rotateRight(c, 15) + 0xa282ead8;
  }

  private static void check(Path file, int at, String what, int stored, int computed) {
    if (stored != computed) {
      throw new IllegalStateException(
          String.format(
              "%s: record at byte %d: masked CRC-32C of its %s is %08x, expected %08x",
              file, at, what, stored, computed));
    }
  }
}
