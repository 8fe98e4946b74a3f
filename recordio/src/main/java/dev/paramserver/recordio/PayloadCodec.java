package dev.paramserver.recordio;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.xerial.snappy.SnappyFramedInputStream;
import org.xerial.snappy.SnappyFramedOutputStream;

/** Compresses and decompresses chunk payloads. */
final class PayloadCodec {
  private PayloadCodec() {}

  static byte[] compress(Compressor c, byte[] data, int length) throws IOException {
    if (c == Compressor.NONE) {
      return length == data.length ? data : Arrays.copyOf(data, length);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, length / 2));
    try (OutputStream z =
        c == Compressor.SNAPPY ? new SnappyFramedOutputStream(out) : new GZIPOutputStream(out)) {
      z.write(data, 0, length);
    }
    return out.toByteArray();
  }

  /**
   * Decompresses {@code stored}; more than {@code limit} decompressed bytes is an error (a corrupt
   * or hostile payload must not exhaust memory).
   *
   * @throws IOException on malformed compressed data or when the limit is exceeded
   */
  static byte[] decompress(Compressor c, byte[] stored, long limit) throws IOException {
    if (c == Compressor.NONE) {
      return stored;
    }
    InputStream raw = new ByteArrayInputStream(stored);
    try (InputStream z =
        c == Compressor.SNAPPY
            ? new SnappyFramedInputStream(raw, true)
            : new GZIPInputStream(raw, 8192)) {
      ByteArrayOutputStream out =
          new ByteArrayOutputStream((int) Math.min(limit, Math.max(64L, stored.length * 2L)));
      byte[] buf = new byte[64 * 1024];
      long total = 0;
      int n;
      while ((n = z.read(buf)) > 0) {
        total += n;
        if (total > limit) {
          throw new IOException("decompressed payload exceeds " + limit + " bytes");
        }
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    } catch (RuntimeException e) {
      // snappy-java reports some malformed input as unchecked exceptions
      throw new IOException(c + " decompression failed: " + e, e);
    }
  }
}
