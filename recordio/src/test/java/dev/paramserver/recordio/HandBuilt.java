package dev.paramserver.recordio;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;

/**
 * Builds RecordIO bytes by hand, straight from docs/design.md §7 and the public compression
 * formats, without the production writer or any compression library.
 */
final class HandBuilt {
  private HandBuilt() {}

  static byte[] le32(long v) {
    return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array();
  }

  /** Per record: uint32 LE length, then the bytes. */
  static byte[] rawPayload(List<byte[]> records) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] r : records) {
      out.writeBytes(le32(r.length));
      out.writeBytes(r);
    }
    return out.toByteArray();
  }

  static long crc32(byte[] b) {
    CRC32 c = new CRC32();
    c.update(b);
    return c.getValue();
  }

  /** Header (magic, CRC of stored payload, compressor, stored size, records) + stored payload. */
  static byte[] chunk(int compressor, byte[] stored, int records) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(new byte[] {0x04, 0x03, 0x02, 0x01});
    out.writeBytes(le32(crc32(stored)));
    out.writeBytes(le32(compressor));
    out.writeBytes(le32(stored.length));
    out.writeBytes(le32(records));
    out.writeBytes(stored);
    return out.toByteArray();
  }

  /**
   * Snappy framing format: stream identifier chunk, then one compressed chunk (type 0x00) whose
   * block is literal-only, then one uncompressed chunk (type 0x01) with the rest.
   */
  static byte[] snappyFramed(byte[] data) {
    int half = data.length / 2;
    byte[] first = java.util.Arrays.copyOfRange(data, 0, half);
    byte[] second = java.util.Arrays.copyOfRange(data, half, data.length);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(new byte[] {(byte) 0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'});
    // snappy block: varint uncompressed length, then one literal element
    ByteArrayOutputStream block = new ByteArrayOutputStream();
    writeVarint(block, first.length);
    if (first.length > 0) {
      if (first.length > 60) {
        throw new IllegalArgumentException("test helper supports literals up to 60 bytes");
      }
      block.write((first.length - 1) << 2);
      block.writeBytes(first);
    }
    frame(out, 0x00, first, block.toByteArray());
    frame(out, 0x01, second, second);
    return out.toByteArray();
  }

  private static void frame(ByteArrayOutputStream out, int type, byte[] data, byte[] body) {
    int len = 4 + body.length;
    out.write(type);
    out.write(len & 0xff);
    out.write((len >>> 8) & 0xff);
    out.write((len >>> 16) & 0xff);
    CRC32C c = new CRC32C();
    c.update(data);
    long crc = c.getValue();
    long masked = (((crc >>> 15) | (crc << 17)) + 0xa282ead8L) & 0xffffffffL;
    out.writeBytes(le32(masked));
    out.writeBytes(body);
  }

  private static void writeVarint(ByteArrayOutputStream out, int v) {
    while ((v & ~0x7f) != 0) {
      out.write((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out.write(v);
  }

  /** gzip member with a single stored (uncompressed) deflate block. */
  static byte[] gzipStored(byte[] data) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    // ID1 ID2 CM=8 FLG=0 MTIME=0 XFL=0 OS=255 (as Go's compress/gzip writes it)
    out.writeBytes(new byte[] {0x1f, (byte) 0x8b, 8, 0, 0, 0, 0, 0, 0, (byte) 0xff});
    int n = data.length;
    out.write(0x01); // BFINAL=1, BTYPE=00 (stored)
    out.write(n & 0xff);
    out.write((n >>> 8) & 0xff);
    out.write(~n & 0xff);
    out.write((~n >>> 8) & 0xff);
    out.writeBytes(data);
    out.writeBytes(le32(crc32(data)));
    out.writeBytes(le32(n));
    return out.toByteArray();
  }
}
