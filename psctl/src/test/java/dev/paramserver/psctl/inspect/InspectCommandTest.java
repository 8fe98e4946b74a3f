package dev.paramserver.psctl.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Run;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InspectCommandTest {
  @TempDir Path dir;

  private Path write(String name, Compressor c, int records, int perChunk) throws Exception {
    Path f = dir.resolve(name);
    try (RecordWriter w = RecordWriter.create(f, c, perChunk)) {
      for (int i = 0; i < records; i++) {
        w.write(
            Example.newBuilder().setLabel(i % 2).addDense(i).addDense(0.5f).build().toByteArray());
      }
    }
    return f;
  }

  @Test
  void goodFiles_viaGlob_countsAndSampleRecords() throws Exception {
    Path a = write("a.recordio", Compressor.GZIP, 10, 4);
    write("b.recordio", Compressor.SNAPPY, 3, 4);
    Run r = Run.psctl("inspect", dir + "/*.recordio", "--records", "2");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .contains(
            a + ": 3 chunks, 10 records, compressor gzip, " + Files.size(a) + " bytes, CRC ok")
        .contains("b.recordio: 1 chunks, 3 records, compressor snappy")
        .contains("  #0 label=0 dense[2]=[0.0, 0.5]")
        .contains("  #1 label=1 dense[2]=[1.0, 0.5]")
        .doesNotContain("#2 ")
        .contains("total: 2 files, 4 chunks, 13 records");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void corruptCrc_exit1_namesFileAndOffset_andStillReportsGoodFiles() throws Exception {
    Path good = write("good.recordio", Compressor.NONE, 4, 2);
    Path bad = write("bad.recordio", Compressor.NONE, 4, 2);
    byte[] bytes = Files.readAllBytes(bad);
    long secondChunk = bytes.length / 2;
    bytes[bytes.length - 1] ^= 1;
    Files.write(bad, bytes);
    Run r = Run.psctl("inspect", bad.toString(), good.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.out()).contains(good + ": 2 chunks, 4 records");
    assertThat(r.err())
        .contains("psctl inspect: CRC mismatch")
        .contains("at offset " + secondChunk + " of " + bad)
        .contains("1 of 2 files are corrupt");
  }

  @Test
  void badMagic_andTruncation_exit1() throws Exception {
    Path f = dir.resolve("junk.recordio");
    Files.writeString(f, "this is not recordio at all");
    Run r = Run.psctl("inspect", f.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("bad magic 0x73696874").contains("at offset 0 of " + f);

    Path t = write("t.recordio", Compressor.SNAPPY, 5, 5);
    byte[] b = Files.readAllBytes(t);
    Files.write(t, java.util.Arrays.copyOf(b, b.length - 2));
    assertThat(Run.psctl("inspect", t.toString()).err()).contains("truncated chunk");
  }

  @Test
  void nonExampleRecords_areShownAsBytes() throws Exception {
    Path f = dir.resolve("raw.recordio");
    try (RecordWriter w = RecordWriter.create(f, Compressor.NONE, 10)) {
      w.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff});
    }
    assertThat(Run.psctl("inspect", "--records", "5", f.toString()).out())
        .contains("#0 (3 bytes, not an Example)");
  }

  @Test
  void json_reportsEveryFileTheTotalsAndTheCorruptOnes() throws Exception {
    Path a = write("a.recordio", Compressor.GZIP, 10, 4);
    write("b.recordio", Compressor.NONE, 3, 4);
    Files.write(dir.resolve("c.recordio"), new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    Run r = Run.psctl("inspect", dir + "/*.recordio", "--records", "1", "-o", "json");
    assertThat(r.code()).isEqualTo(1);
    tools.jackson.databind.JsonNode j = new tools.jackson.databind.ObjectMapper().readTree(r.out());
    assertThat(j.path("files")).hasSize(3);
    tools.jackson.databind.JsonNode first = j.path("files").get(0);
    assertThat(first.path("file").asString()).isEqualTo(a.toString());
    assertThat(first.path("chunks").asInt()).isEqualTo(3);
    assertThat(first.path("records").asLong()).isEqualTo(10);
    assertThat(first.path("bytes").asLong()).isEqualTo(Files.size(a));
    assertThat(first.path("compressors").get(0).asString()).isEqualTo("gzip");
    assertThat(first.path("samples").get(0).asString()).isEqualTo("label=0 dense[2]=[0.0, 0.5]");
    assertThat(first.has("error")).isFalse();
    assertThat(j.path("files").get(2).path("error").asString()).isNotEmpty();
    assertThat(j.path("total").path("files").asInt()).isEqualTo(3);
    assertThat(j.path("total").path("records").asLong()).isEqualTo(13);
    assertThat(j.path("total").path("corrupt").asInt()).isEqualTo(1);
    assertThat(j.path("datasets")).isEmpty();
  }
}
