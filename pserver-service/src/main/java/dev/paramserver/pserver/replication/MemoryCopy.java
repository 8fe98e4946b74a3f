package dev.paramserver.pserver.replication;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A copy of the shard held in memory, in chunks of 1 MiB, when it cannot be staged on disk; a write
 * past {@code cap} bytes fails (the copy is then retried, and the backup stays out of sync) rather
 * than filling the heap.
 */
final class MemoryCopy extends OutputStream {
  private static final int CHUNK = 1 << 20;

  private final long cap;
  private final List<byte[]> chunks = new ArrayList<>();
  private int used = CHUNK; // bytes used in the last chunk (none yet: a new one is needed)
  private long size;

  MemoryCopy(long cap) {
    this.cap = cap;
  }

  @Override
  public void write(int b) throws IOException {
    write(new byte[] {(byte) b}, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (size + len > cap) {
      throw new IOException(
          "the copy is larger than " + cap + " bytes: it does not fit in memory either");
    }
    while (len > 0) {
      if (used == CHUNK) {
        chunks.add(new byte[CHUNK]);
        used = 0;
      }
      int n = Math.min(len, CHUNK - used);
      System.arraycopy(b, off, chunks.get(chunks.size() - 1), used, n);
      used += n;
      off += n;
      len -= n;
      size += n;
    }
  }

  long size() {
    return size;
  }

  /** The bytes written, in order. */
  InputStream input() {
    List<InputStream> parts = new ArrayList<>(chunks.size());
    for (int i = 0; i < chunks.size(); i++) {
      int n = i == chunks.size() - 1 ? used : CHUNK;
      parts.add(new ByteArrayInputStream(chunks.get(i), 0, n));
    }
    return new SequenceInputStream(Collections.enumeration(parts));
  }
}
