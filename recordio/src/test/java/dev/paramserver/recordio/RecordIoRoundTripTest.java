package dev.paramserver.recordio;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class RecordIoRoundTripTest {
  @TempDir Path dir;

  @ParameterizedTest
  @EnumSource(Compressor.class)
  void roundTrip_multipleChunks_preservesRecordsAndOrder(Compressor c) throws Exception {
    Random rnd = new Random(7);
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      byte[] r = new byte[i % 10 == 0 ? 0 : rnd.nextInt(300)];
      for (int j = 0; j < r.length; j++) {
        r[j] = (byte) (rnd.nextInt(4) + 'a'); // compressible
      }
      records.add(r);
    }
    Path f = dir.resolve("rt-" + c + ".recordio");
    try (RecordWriter w = RecordWriter.create(f, c, 64)) {
      for (byte[] r : records) {
        w.write(r);
      }
      assertThat(w.chunksWritten()).isEqualTo(15); // 15 full chunks; the 16th is still pending
    }
    List<ChunkInfo> chunks = RecordIndex.scan(f);
    assertThat(chunks).hasSize(16);
    assertThat(chunks).extracting(ChunkInfo::records).startsWith(64).endsWith(1000 - 15 * 64);
    List<byte[]> back = new ArrayList<>();
    for (ChunkInfo ci : chunks) {
      back.addAll(RecordReader.readChunk(ci));
    }
    assertThat(back).containsExactlyElementsOf(records);
    assertThat(RecordReader.readAll(f)).containsExactlyElementsOf(records);
  }

  @Test
  void readChunks_acrossFiles_keepsOrder() throws Exception {
    Path a = dir.resolve("a.recordio");
    Path b = dir.resolve("b.recordio");
    for (Path f : List.of(a, b)) {
      try (RecordWriter w = RecordWriter.create(f, Compressor.SNAPPY, 2)) {
        for (int i = 0; i < 5; i++) {
          w.write(new byte[] {(byte) i, (byte) f.getFileName().toString().charAt(0)});
        }
      }
    }
    List<ChunkInfo> picked = new ArrayList<>(RecordIndex.scan(a).subList(1, 3));
    picked.add(RecordIndex.scan(b).get(0));
    assertThat(RecordReader.readChunks(picked))
        .containsExactly(
            new byte[] {2, 'a'},
            new byte[] {3, 'a'},
            new byte[] {4, 'a'},
            new byte[] {0, 'b'},
            new byte[] {1, 'b'});
  }

  @Test
  void directory_isRejectedClearly() {
    assertThatThrownBy(() -> RecordIndex.scan(dir))
        .hasMessage(dir + " is a directory, not a RecordIO file");
  }

  @Test
  void flushChunk_endsNonEmptyChunkOnly() throws Exception {
    Path f = dir.resolve("flush.recordio");
    try (RecordWriter w = RecordWriter.create(f, Compressor.GZIP, 100)) {
      w.flushChunk(); // nothing pending: no chunk
      w.write(new byte[] {1});
      w.flushChunk();
      w.flushChunk();
      w.write(new byte[] {2});
      w.write(new byte[] {3});
    }
    assertThat(RecordIndex.scan(f)).extracting(ChunkInfo::records).containsExactly(1, 2);
  }

  @Test
  void writer_cutsChunkBeforeExceedingRecordByteCap() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] big = new byte[RecordWriter.MAX_CHUNK_RECORD_BYTES / 2 + 1];
    try (RecordWriter w = new RecordWriter(out, Compressor.NONE, 1000)) {
      w.write(big);
      w.write(big); // would exceed 32 MiB together: starts a new chunk
      assertThat(w.chunksWritten()).isEqualTo(1);
    }
    Path f = dir.resolve("big.recordio");
    Files.write(f, out.toByteArray());
    assertThat(RecordIndex.scan(f)).extracting(ChunkInfo::records).containsExactly(1, 1);
  }

  @Test
  void writer_rejectsRecordOverCap() throws Exception {
    try (RecordWriter w = new RecordWriter(new ByteArrayOutputStream(), Compressor.NONE, 1)) {
      assertThatThrownBy(() -> w.write(new byte[RecordWriter.MAX_CHUNK_RECORD_BYTES + 1]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("exceeds the RecordIO chunk cap of 33554432 bytes");
    }
  }

  @Test
  void writer_rejectsBadArgumentsAndUseAfterClose() throws Exception {
    assertThatThrownBy(() -> new RecordWriter(new ByteArrayOutputStream(), Compressor.NONE, 0))
        .hasMessageContaining("at least 1");
    RecordWriter w = new RecordWriter(new ByteArrayOutputStream(), Compressor.NONE, 1);
    w.close();
    w.close();
    assertThatThrownBy(() -> w.write(new byte[1])).hasMessageContaining("closed");
  }

  @Test
  void compressor_parsesNamesAndCodes() {
    assertThat(Compressor.parse("SNAPPY")).isEqualTo(Compressor.SNAPPY);
    assertThat(Compressor.parse(" gzip ")).isEqualTo(Compressor.GZIP);
    assertThat(Compressor.parse("None")).isEqualTo(Compressor.NONE);
    assertThat(Compressor.fromCode(2)).isEqualTo(Compressor.GZIP);
    assertThatThrownBy(() -> Compressor.parse("lz4"))
        .hasMessage("unknown compressor 'lz4': expected one of none, gzip, snappy");
    assertThatThrownBy(() -> Compressor.fromCode(9)).hasMessageContaining("code 9");
  }

  @Test
  void scan_fileWithHundredThousandChunks_isFast() throws Exception {
    Path f = dir.resolve("many.recordio");
    try (RecordWriter w = RecordWriter.create(f, Compressor.NONE, 1)) {
      for (int i = 0; i < 100_000; i++) {
        w.write(new byte[] {(byte) i, (byte) (i >> 8)});
      }
    }
    long t0 = System.nanoTime();
    List<ChunkInfo> chunks = RecordIndex.scan(f);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertThat(chunks).hasSize(100_000);
    assertThat(chunks.get(99_999).offset()).isEqualTo(99_999L * 26);
    assertThat(ms).as("scan time in ms").isLessThan(5_000);
    assertThat(RecordReader.readChunk(chunks.get(12_345)).get(0))
        .containsExactly((byte) 12_345, (byte) (12_345 >> 8));
  }
}
