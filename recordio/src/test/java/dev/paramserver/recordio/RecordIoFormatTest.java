package dev.paramserver.recordio;

import static dev.paramserver.recordio.HandBuilt.chunk;
import static dev.paramserver.recordio.HandBuilt.rawPayload;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reader against files built byte by byte from docs/design.md §7, and the writer's exact bytes.
 */
class RecordIoFormatTest {
  @TempDir Path dir;

  private static final List<byte[]> RECORDS =
      List.of(
          "hello".getBytes(UTF_8), new byte[0], "world!".getBytes(UTF_8), new byte[] {0, -1, 7});

  @Test
  void readsHandBuiltUncompressedChunk() throws Exception {
    Path f = write("none.recordio", chunk(0, rawPayload(RECORDS), RECORDS.size()));
    assertRecords(f, RECORDS);
  }

  @Test
  void readsHandBuiltSnappyFramedChunk() throws Exception {
    Path f = write("snappy.recordio", chunk(1, HandBuilt.snappyFramed(rawPayload(RECORDS)), 4));
    assertRecords(f, RECORDS);
  }

  @Test
  void readsHandBuiltGzipChunk() throws Exception {
    Path f = write("gzip.recordio", chunk(2, HandBuilt.gzipStored(rawPayload(RECORDS)), 4));
    assertRecords(f, RECORDS);
  }

  @Test
  void readsConsecutiveHandBuiltChunksOfMixedCompressors() throws Exception {
    List<byte[]> a = RECORDS.subList(0, 2);
    List<byte[]> b = RECORDS.subList(2, 4);
    ByteArrayOutputStream file = new ByteArrayOutputStream();
    file.writeBytes(chunk(0, rawPayload(a), 2));
    file.writeBytes(chunk(2, HandBuilt.gzipStored(rawPayload(b)), 2));
    file.writeBytes(chunk(1, HandBuilt.snappyFramed(rawPayload(a)), 2));
    Path f = write("mixed.recordio", file.toByteArray());

    List<ChunkInfo> chunks = RecordIndex.scan(f);
    assertThat(chunks).hasSize(3);
    assertThat(chunks.get(0).offset()).isZero();
    assertThat(chunks.get(1).offset()).isEqualTo(chunks.get(0).length());
    assertThat(chunks.stream().mapToLong(ChunkInfo::length).sum()).isEqualTo(Files.size(f));
    assertThat(RecordIndex.scanHeaders(f))
        .extracting(ChunkHeader::compressor)
        .containsExactly(Compressor.NONE, Compressor.GZIP, Compressor.SNAPPY);
    assertThat(RecordReader.readChunk(chunks.get(1))).containsExactlyElementsOf(b);
    assertThat(RecordReader.readChunk(chunks.get(2))).containsExactlyElementsOf(a);
  }

  @Test
  void writerNoneBytesEqualHandBuiltBytes() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (RecordWriter w = new RecordWriter(out, Compressor.NONE, 3)) {
      for (byte[] r : RECORDS) {
        w.write(r);
      }
    }
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    expected.writeBytes(chunk(0, rawPayload(RECORDS.subList(0, 3)), 3));
    expected.writeBytes(chunk(0, rawPayload(RECORDS.subList(3, 4)), 1));
    assertThat(out.toByteArray()).isEqualTo(expected.toByteArray());
  }

  @Test
  void writerHeaderFieldsAreLittleEndianAndCrcCoversStoredPayload() throws Exception {
    for (Compressor c : Compressor.values()) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (RecordWriter w = new RecordWriter(out, c, 100)) {
        for (byte[] r : RECORDS) {
          w.write(r);
        }
      }
      byte[] bytes = out.toByteArray();
      ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
      assertThat(bytes[0]).isEqualTo((byte) 0x04);
      assertThat(bytes[3]).isEqualTo((byte) 0x01);
      assertThat(b.getInt(8)).as("compressor of %s", c).isEqualTo(c.code());
      int size = b.getInt(12);
      assertThat(size).isEqualTo(bytes.length - 20);
      assertThat(b.getInt(16)).isEqualTo(4);
      byte[] stored = java.util.Arrays.copyOfRange(bytes, 20, bytes.length);
      assertThat(Integer.toUnsignedLong(b.getInt(4))).isEqualTo(HandBuilt.crc32(stored));
      if (c == Compressor.SNAPPY) {
        assertThat(java.util.Arrays.copyOfRange(stored, 0, 10))
            .isEqualTo(new byte[] {(byte) 0xff, 6, 0, 0, 's', 'N', 'a', 'P', 'p', 'Y'});
      }
      if (c == Compressor.GZIP) {
        assertThat(stored[0]).isEqualTo((byte) 0x1f);
        assertThat(stored[1]).isEqualTo((byte) 0x8b);
      }
    }
  }

  @Test
  void emptyFileHasNoChunks() throws Exception {
    Path f = write("empty.recordio", new byte[0]);
    assertThat(RecordIndex.scan(f)).isEmpty();
    assertThat(RecordReader.readAll(f)).isEmpty();
  }

  private Path write(String name, byte[] bytes) throws Exception {
    Path f = dir.resolve(name);
    Files.write(f, bytes);
    return f;
  }

  private static void assertRecords(Path f, List<byte[]> expected) throws Exception {
    List<ChunkInfo> chunks = RecordIndex.scan(f);
    assertThat(chunks).hasSize(1);
    assertThat(chunks.get(0).records()).isEqualTo(expected.size());
    assertThat(chunks.get(0).length()).isEqualTo(Files.size(f));
    assertThat(RecordReader.readChunk(chunks.get(0))).containsExactlyElementsOf(expected);
    assertThat(RecordReader.readAll(f)).containsExactlyElementsOf(expected);
  }
}
