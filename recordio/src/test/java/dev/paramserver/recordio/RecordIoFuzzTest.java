package dev.paramserver.recordio;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Seeded random round trips, and random damage: every corrupted byte and every truncation must
 * surface as a CorruptRecordException (never another exception, never silently wrong records).
 */
class RecordIoFuzzTest {
  @TempDir Path dir;

  private static List<byte[]> randomRecords(Random rnd, int n) {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] r = new byte[rnd.nextInt(5) == 0 ? 0 : rnd.nextInt(200)];
      for (int j = 0; j < r.length; j++) {
        r[j] = (byte) (rnd.nextBoolean() ? 'x' : rnd.nextInt(256));
      }
      out.add(r);
    }
    return out;
  }

  private static byte[] encode(List<byte[]> records, Compressor c, int perChunk) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (RecordWriter w = new RecordWriter(out, c, perChunk)) {
      for (byte[] r : records) {
        w.write(r);
      }
    }
    return out.toByteArray();
  }

  @Test
  void randomRoundTrips() throws Exception {
    Random rnd = new Random(1234);
    for (int trial = 0; trial < 60; trial++) {
      Compressor c = Compressor.values()[trial % 3];
      List<byte[]> records = randomRecords(rnd, rnd.nextInt(50));
      Path f = dir.resolve("rt.recordio");
      Files.write(f, encode(records, c, 1 + rnd.nextInt(10)));
      assertThat(RecordReader.readAll(f)).as("trial %d", trial).containsExactlyElementsOf(records);
    }
  }

  @Test
  void everyCorruptedByte_isReportedAsCorruption() throws Exception {
    Random rnd = new Random(99);
    for (Compressor c : Compressor.values()) {
      List<byte[]> records = randomRecords(rnd, 6);
      byte[] good = encode(records, c, 3);
      Path f = dir.resolve("flip-" + c + ".recordio");
      // every header byte of the first two chunks, then a sample of the rest
      for (int pos = 0; pos < good.length; pos += pos < 120 ? 1 : 1 + rnd.nextInt(12)) {
        byte[] bad = good.clone();
        bad[pos] ^= (byte) (1 << rnd.nextInt(8));
        Files.write(f, bad);
        Throwable t = catchThrowable(() -> RecordReader.readAll(f));
        assertThat(t).as("%s flip at byte %d", c, pos).isInstanceOf(CorruptRecordException.class);
        assertThat(t.getMessage()).contains(" of " + f);
      }
    }
  }

  @Test
  void everyTruncation_isReportedAsCorruption() throws Exception {
    byte[] good = encode(randomRecords(new Random(5), 9), Compressor.SNAPPY, 4);
    List<Long> boundaries = new ArrayList<>();
    Path whole = dir.resolve("whole.recordio");
    Files.write(whole, good);
    for (ChunkInfo ci : RecordIndex.scan(whole)) {
      boundaries.add(ci.offset());
    }
    Path f = dir.resolve("cut.recordio");
    for (int len = 1; len < good.length; len += len < 80 ? 1 : 1 + new Random(len).nextInt(8)) {
      Files.write(f, Arrays.copyOf(good, len));
      if (boundaries.contains((long) len)) {
        assertThat(RecordIndex.scan(f)).hasSize(boundaries.indexOf((long) len));
      } else {
        assertThatThrownBy(() -> RecordIndex.scan(f))
            .as("cut at %d", len)
            .isInstanceOf(CorruptRecordException.class)
            .hasMessageContaining("truncated");
      }
    }
  }
}
