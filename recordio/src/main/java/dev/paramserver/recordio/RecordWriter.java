package dev.paramserver.recordio;

import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;
import java.util.zip.CRC32;

/**
 * Writes records into RecordIO chunks (docs/design.md §7). Records are buffered into the current
 * chunk, which is written out when it holds {@code recordsPerChunk} records, when the next record
 * would take its record bytes past {@link #MAX_CHUNK_RECORD_BYTES}, on {@link #flushChunk()} and on
 * {@link #close()}. Not thread-safe.
 */
public final class RecordWriter implements Closeable {
  /** Maximum record bytes (excluding the 4-byte length prefixes) in one chunk: 32 MiB. */
  public static final int MAX_CHUNK_RECORD_BYTES = 32 << 20;

  // bounds the buffer when many tiny records share a chunk (the length prefixes are not capped)
  private static final int MAX_PAYLOAD_BYTES = 1 << 30;

  private final OutputStream out;
  private final Compressor compressor;
  private final int recordsPerChunk;
  private byte[] payload = new byte[4096];
  private int payloadLength;
  private int recordBytes;
  private int records;
  private long chunksWritten;
  private long bytesWritten;
  private boolean closed;

  /**
   * A writer onto {@code out} (which it closes on {@link #close()}).
   *
   * @param recordsPerChunk maximum records per chunk, at least 1
   */
  public RecordWriter(OutputStream out, Compressor compressor, int recordsPerChunk) {
    if (recordsPerChunk < 1) {
      throw new IllegalArgumentException(
          "records per chunk must be at least 1, got " + recordsPerChunk);
    }
    this.out = Objects.requireNonNull(out, "out");
    this.compressor = Objects.requireNonNull(compressor, "compressor");
    this.recordsPerChunk = recordsPerChunk;
  }

  /** Creates (or truncates) {@code file} and returns a writer onto it. */
  public static RecordWriter create(Path file, Compressor compressor, int recordsPerChunk)
      throws IOException {
    if (recordsPerChunk < 1) {
      throw new IllegalArgumentException(
          "records per chunk must be at least 1, got " + recordsPerChunk);
    }
    return new RecordWriter(
        new BufferedOutputStream(Files.newOutputStream(file), 1 << 16),
        compressor,
        recordsPerChunk);
  }

  /**
   * Appends one record (may be empty).
   *
   * @throws IllegalArgumentException if the record alone exceeds {@link #MAX_CHUNK_RECORD_BYTES}
   */
  public void write(byte[] record) throws IOException {
    ensureOpen();
    if (record.length > MAX_CHUNK_RECORD_BYTES) {
      throw new IllegalArgumentException(
          "record of "
              + record.length
              + " bytes exceeds the RecordIO chunk cap of "
              + MAX_CHUNK_RECORD_BYTES
              + " bytes");
    }
    if (records > 0
        && ((long) recordBytes + record.length > MAX_CHUNK_RECORD_BYTES
            || (long) payloadLength + 4 + record.length > MAX_PAYLOAD_BYTES)) {
      flushChunk();
    }
    ensureCapacity(payloadLength + 4 + record.length);
    int n = record.length;
    payload[payloadLength] = (byte) n;
    payload[payloadLength + 1] = (byte) (n >>> 8);
    payload[payloadLength + 2] = (byte) (n >>> 16);
    payload[payloadLength + 3] = (byte) (n >>> 24);
    System.arraycopy(record, 0, payload, payloadLength + 4, n);
    payloadLength += 4 + n;
    recordBytes += n;
    records++;
    if (records >= recordsPerChunk) {
      flushChunk();
    }
  }

  /** Writes the current chunk out if it holds any record; otherwise does nothing. */
  public void flushChunk() throws IOException {
    ensureOpen();
    if (records == 0) {
      return;
    }
    byte[] stored = PayloadCodec.compress(compressor, payload, payloadLength);
    CRC32 crc = new CRC32();
    crc.update(stored);
    out.write(ChunkHeader.encode(crc.getValue(), compressor, stored.length, records));
    out.write(stored);
    bytesWritten += ChunkHeader.SIZE + stored.length;
    chunksWritten++;
    payloadLength = 0;
    recordBytes = 0;
    records = 0;
    if (payload.length > (1 << 20)) {
      payload = new byte[4096]; // do not pin a large buffer after a big chunk
    }
  }

  /** Chunks written so far. */
  public long chunksWritten() {
    return chunksWritten;
  }

  /** Bytes written so far (headers and stored payloads of complete chunks). */
  public long bytesWritten() {
    return bytesWritten;
  }

  /** Writes the pending chunk and closes the underlying stream. Idempotent. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    try {
      flushChunk();
      out.flush();
    } finally {
      closed = true;
      out.close();
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("RecordWriter is closed");
    }
  }

  private void ensureCapacity(int needed) {
    if (needed > payload.length) {
      long grown = Math.max((long) needed, Math.min(2L * payload.length, Integer.MAX_VALUE - 8L));
      payload = Arrays.copyOf(payload, (int) grown);
    }
  }
}
