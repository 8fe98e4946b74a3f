package dev.paramserver.recordio;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;

/**
 * Reads RecordIO chunks by range, verifying the magic, the CRC-32 of the stored payload, the
 * decompression, the record count and every record length. Any inconsistency is a {@link
 * CorruptRecordException} naming the file and the chunk's offset. Sizes are checked against the
 * file length and the chunk cap before anything is allocated, so garbage input cannot exhaust
 * memory. All methods are static and thread-safe.
 */
public final class RecordReader {
  private RecordReader() {}

  /**
   * Reads the records of one chunk of a local file (located with {@link RecordIndex#scan(Path)}).
   */
  public static List<byte[]> readChunk(ChunkInfo chunk) throws IOException {
    return readChunks(List.of(chunk), RangeSource::openLocal);
  }

  /** Reads the records of one chunk of {@code source} (one ranged read of the whole chunk). */
  public static List<byte[]> readChunk(RangeSource source, ChunkInfo chunk) throws IOException {
    return readChunk(source, chunk.offset(), chunk.length(), source.size());
  }

  /**
   * Reads the records of several chunks of local files, in the order given, opening each run of
   * chunks from the same file once (e.g. the chunks of one task).
   */
  public static List<byte[]> readChunks(List<ChunkInfo> chunks) throws IOException {
    return readChunks(chunks, RangeSource::openLocal);
  }

  /**
   * Reads the records of several chunks, in the order given, opening each run of chunks from the
   * same file or object once with {@code opener}.
   */
  public static List<byte[]> readChunks(List<ChunkInfo> chunks, RangeSource.Opener opener)
      throws IOException {
    List<byte[]> out = new ArrayList<>();
    int i = 0;
    while (i < chunks.size()) {
      String location = chunks.get(i).location();
      try (RangeSource src = opener.open(location)) {
        long size = src.size();
        for (; i < chunks.size() && chunks.get(i).location().equals(location); i++) {
          ChunkInfo c = chunks.get(i);
          out.addAll(readChunk(src, c.offset(), c.length(), size));
        }
      }
    }
    return out;
  }

  /**
   * Calls {@code consumer} with every record of {@code file}, in order. Chunks are read one at a
   * time, so memory use is bounded by the largest chunk. A corrupt chunk throws after the records
   * of the chunks before it were delivered.
   */
  public static void forEach(Path file, RecordConsumer consumer) throws IOException {
    try (RangeSource src = RangeSource.ofFile(file)) {
      forEach(src, consumer);
    }
  }

  /** Like {@link #forEach(Path, RecordConsumer)} for any source (one ranged read per chunk). */
  public static void forEach(RangeSource source, RecordConsumer consumer) throws IOException {
    long size = source.size();
    long offset = 0;
    while (offset < size) {
      ChunkHeader h = ChunkHeader.read(source, offset, size);
      for (byte[] r : readChunk(source, offset, h.chunkLength(), size)) {
        consumer.accept(r);
      }
      offset += h.chunkLength();
    }
  }

  /** All records of {@code file} in a list (convenient for small files and tests). */
  public static List<byte[]> readAll(Path file) throws IOException {
    List<byte[]> all = new ArrayList<>();
    forEach(file, all::add);
    return all;
  }

  static List<byte[]> readChunk(RangeSource ch, long offset, long expectedLength, long fileSize)
      throws IOException {
    String file = ch.name();
    // One read for header and payload: on an object store that is one ranged request per chunk.
    // A stale index may claim more than the file holds: read what is there, the header check below
    // then names the problem.
    long available = Math.max(0, Math.min(expectedLength, fileSize - offset));
    ByteBuffer whole = ByteBuffer.allocate((int) Math.min(available, Integer.MAX_VALUE - 8));
    ChunkHeader.readFully(ch, whole, offset);
    whole.flip();
    ChunkHeader h = ChunkHeader.read(new BufferSource(file, whole, offset), offset, fileSize);
    if (h.chunkLength() != expectedLength) {
      throw new CorruptRecordException(
          file,
          offset,
          "chunk length mismatch: index says "
              + expectedLength
              + " bytes, header says "
              + h.chunkLength()
              + " (file changed since it was indexed?)");
    }
    if (h.payloadSize() > Integer.MAX_VALUE - 8) {
      throw new CorruptRecordException(
          file, offset, "chunk payload of " + h.payloadSize() + " bytes is too large");
    }
    byte[] bytes = new byte[(int) h.payloadSize()];
    whole.position(ChunkHeader.SIZE);
    whole.get(bytes);
    CRC32 crc = new CRC32();
    crc.update(bytes);
    if (crc.getValue() != h.crc()) {
      throw new CorruptRecordException(
          file,
          offset,
          String.format(
              "CRC mismatch: header says 0x%08x, payload has 0x%08x", h.crc(), crc.getValue()));
    }
    // record bytes are capped per chunk; the length prefixes add 4 bytes per record
    long limit =
        Math.min(RecordWriter.MAX_CHUNK_RECORD_BYTES + 4L * h.records(), Integer.MAX_VALUE - 8L);
    byte[] data;
    try {
      data = PayloadCodec.decompress(h.compressor(), bytes, limit);
    } catch (CorruptRecordException e) {
      throw e;
    } catch (IOException e) {
      throw new CorruptRecordException(
          file, offset, "cannot decompress " + h.compressor() + " payload: " + e.getMessage(), e);
    }
    return parseRecords(data, h, file);
  }

  private static List<byte[]> parseRecords(byte[] data, ChunkHeader h, String file)
      throws CorruptRecordException {
    long offset = h.offset();
    List<byte[]> out = new ArrayList<>(Math.min(h.records(), data.length / 4 + 1));
    int pos = 0;
    long recordBytes = 0;
    for (int i = 0; i < h.records(); i++) {
      if (data.length - pos < 4) {
        throw new CorruptRecordException(
            file,
            offset,
            "chunk payload ends inside the length of record "
                + i
                + " of "
                + h.records()
                + " (uncompressed payload "
                + data.length
                + " bytes)");
      }
      long len =
          (data[pos] & 0xffL)
              | (data[pos + 1] & 0xffL) << 8
              | (data[pos + 2] & 0xffL) << 16
              | (data[pos + 3] & 0xffL) << 24;
      pos += 4;
      if (len > data.length - pos) {
        throw new CorruptRecordException(
            file,
            offset,
            "record "
                + i
                + " claims "
                + len
                + " bytes but only "
                + (data.length - pos)
                + " bytes of the payload are left");
      }
      recordBytes += len;
      if (recordBytes > RecordWriter.MAX_CHUNK_RECORD_BYTES) {
        throw new CorruptRecordException(
            file,
            offset,
            "chunk holds more than " + RecordWriter.MAX_CHUNK_RECORD_BYTES + " record bytes");
      }
      byte[] r = new byte[(int) len];
      System.arraycopy(data, pos, r, 0, (int) len);
      pos += (int) len;
      out.add(r);
    }
    if (pos != data.length) {
      throw new CorruptRecordException(
          file,
          offset,
          (data.length - pos)
              + " unexpected bytes after the "
              + h.records()
              + " records the header announces");
    }
    return out;
  }

  /** A chunk already in memory, seen as a source starting at {@code base} (header re-checks). */
  private record BufferSource(String name, ByteBuffer bytes, long base) implements RangeSource {
    @Override
    public long size() {
      return base + bytes.limit();
    }

    @Override
    public void readFully(ByteBuffer dst, long position) throws java.io.EOFException {
      int from = (int) (position - base);
      if (from < 0 || from + dst.remaining() > bytes.limit()) {
        throw new java.io.EOFException(name + " ended at offset " + size());
      }
      dst.put(bytes.duplicate().position(from).limit(from + dst.remaining()));
    }

    @Override
    public void close() {}
  }
}
