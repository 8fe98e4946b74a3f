package dev.paramserver.recordio;

import static dev.paramserver.recordio.HandBuilt.chunk;
import static dev.paramserver.recordio.HandBuilt.le32;
import static dev.paramserver.recordio.HandBuilt.rawPayload;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad input yields a CorruptRecordException naming file and offset, never an obscure error. */
class RecordIoCorruptionTest {
  @TempDir Path dir;

  private static final List<byte[]> RECS = List.of(new byte[] {1, 2, 3}, new byte[] {4});

  /** A good 31-byte chunk followed by the given bytes. */
  private Path fileWithGoodChunkThen(byte[] second) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(chunk(0, rawPayload(RECS), 2));
    out.writeBytes(second);
    Path f = dir.resolve("bad.recordio");
    Files.write(f, out.toByteArray());
    return f;
  }

  private static final int FIRST = 20 + 4 + 3 + 4 + 1;

  @Test
  void badMagic_namesOffsetAndFile() throws Exception {
    byte[] c = chunk(0, rawPayload(RECS), 2);
    c[0] = 0x08;
    c[1] = 0x07;
    c[2] = 0x06;
    c[3] = 0x05;
    Path f = fileWithGoodChunkThen(c);
    assertThatThrownBy(() -> RecordIndex.scan(f))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageStartingWith("bad magic 0x05060708 (expected 0x01020304)")
        .hasMessageEndingWith("at offset " + FIRST + " of " + f)
        .satisfies(
            e -> {
              assertThat(((CorruptRecordException) e).offset()).isEqualTo(FIRST);
              assertThat(((CorruptRecordException) e).file()).isEqualTo(f);
            });
    assertThatThrownBy(() -> RecordReader.readAll(f)).hasMessageContaining("bad magic");
  }

  @Test
  void crcMismatch_detectedOnRead_notOnScan() throws Exception {
    byte[] c = chunk(0, rawPayload(RECS), 2);
    c[c.length - 1] ^= 0x40; // flip a payload bit
    Path f = fileWithGoodChunkThen(c);
    List<ChunkInfo> chunks = RecordIndex.scan(f);
    assertThat(chunks).hasSize(2);
    assertThat(RecordReader.readChunk(chunks.get(0))).hasSize(2);
    assertThatThrownBy(() -> RecordReader.readChunk(chunks.get(1)))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageStartingWith("CRC mismatch")
        .hasMessageEndingWith("at offset " + FIRST + " of " + f);
  }

  @Test
  void truncatedPayload_namesOffset() throws Exception {
    byte[] c = chunk(0, rawPayload(RECS), 2);
    Path f = fileWithGoodChunkThen(Arrays.copyOf(c, c.length - 3));
    assertThatThrownBy(() -> RecordIndex.scan(f))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("truncated chunk: header says 12 payload bytes but only 9")
        .hasMessageEndingWith("at offset " + FIRST + " of " + f);
  }

  @Test
  void truncatedHeader_namesOffset() throws Exception {
    Path f = fileWithGoodChunkThen(new byte[] {4, 3, 2, 1, 0, 0});
    assertThatThrownBy(() -> RecordIndex.scan(f))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("truncated chunk header (6 bytes left")
        .hasMessageEndingWith("at offset " + FIRST + " of " + f);
  }

  @Test
  void hugePayloadSize_isTruncationNotOutOfMemory() throws Exception {
    byte[] c = chunk(0, rawPayload(RECS), 2);
    System.arraycopy(le32(0xFFFFFFF0L), 0, c, 12, 4);
    Path f = fileWithGoodChunkThen(c);
    assertThatThrownBy(() -> RecordIndex.scan(f))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("header says 4294967280 payload bytes")
        .hasMessageContaining("offset " + FIRST);
  }

  @Test
  void hugeRecordLengthOrCount_isClearError() throws Exception {
    // record length field 0xFFFFFFFF inside a payload with a valid CRC
    byte[] payload = rawPayload(RECS);
    System.arraycopy(le32(0xFFFFFFFFL), 0, payload, 0, 4);
    Path f = fileWithGoodChunkThen(chunk(0, payload, 2));
    assertThatThrownBy(() -> RecordReader.readAll(f))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("record 0 claims 4294967295 bytes")
        .hasMessageEndingWith("at offset " + FIRST + " of " + f);

    Path g = fileWithGoodChunkThen(chunk(0, rawPayload(RECS), 0x7FFFFFFF));
    assertThatThrownBy(() -> RecordReader.readAll(g))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("ends inside the length of record 2 of 2147483647");

    Path h = fileWithGoodChunkThen(chunk(0, rawPayload(RECS), 1));
    assertThatThrownBy(() -> RecordReader.readAll(h))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("5 unexpected bytes after the 1 records");
  }

  @Test
  void unknownCompressorAndBadCompressedData_areCorruptChunks() throws Exception {
    Path f = fileWithGoodChunkThen(chunk(7, rawPayload(RECS), 2));
    assertThatThrownBy(() -> RecordIndex.scan(f))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("unknown RecordIO compressor code 7");

    Path g = fileWithGoodChunkThen(chunk(1, rawPayload(RECS), 2)); // not snappy-framed
    assertThatThrownBy(() -> RecordReader.readAll(g))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("cannot decompress snappy payload")
        .hasMessageContaining("offset " + FIRST);

    Path h = fileWithGoodChunkThen(chunk(2, rawPayload(RECS), 2)); // not gzip
    assertThatThrownBy(() -> RecordReader.readAll(h))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("cannot decompress gzip payload");
  }

  @Test
  void staleIndex_lengthMismatchIsReported() throws Exception {
    Path f = fileWithGoodChunkThen(new byte[0]);
    ChunkInfo wrong = new ChunkInfo(f, 0, FIRST + 1, 2);
    assertThatThrownBy(() -> RecordReader.readChunk(wrong))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("chunk length mismatch");
  }
}
