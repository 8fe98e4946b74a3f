package dev.paramserver.master.state;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/** Compresses the master's state (zlib: deflate with an Adler-32 check) and cuts it into parts. */
final class SnapshotCodec {
  private SnapshotCodec() {}

  static byte[] compress(byte[] raw) {
    Deflater deflater = new Deflater(Deflater.BEST_SPEED);
    try {
      deflater.setInput(raw);
      deflater.finish();
      ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, raw.length / 4));
      byte[] buf = new byte[64 * 1024];
      while (!deflater.finished()) {
        int n = deflater.deflate(buf);
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    } finally {
      deflater.end();
    }
  }

  static byte[] decompress(byte[] data, String what) {
    Inflater inflater = new Inflater();
    try {
      inflater.setInput(data);
      ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, data.length * 4));
      byte[] buf = new byte[64 * 1024];
      while (!inflater.finished()) {
        int n = inflater.inflate(buf);
        if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
          throw new IllegalStateException(
              what + " in etcd is truncated (" + data.length + " bytes)");
        }
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    } catch (DataFormatException e) {
      throw new IllegalStateException(what + " in etcd is corrupt: " + e.getMessage(), e);
    } finally {
      inflater.end();
    }
  }

  static List<byte[]> split(byte[] data, int partBytes) {
    List<byte[]> parts = new ArrayList<>();
    for (int off = 0; off < data.length; off += partBytes) {
      parts.add(Arrays.copyOfRange(data, off, Math.min(data.length, off + partBytes)));
    }
    if (parts.isEmpty()) {
      parts.add(new byte[0]);
    }
    return parts;
  }

  static byte[] join(List<byte[]> parts) {
    int total = 0;
    for (byte[] p : parts) {
      total += p.length;
    }
    byte[] out = new byte[total];
    int off = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, off, p.length);
      off += p.length;
    }
    return out;
  }
}
