package dev.paramserver.psctl.convert;

import static dev.paramserver.psctl.Records.examples;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Run;
import dev.paramserver.recordio.ChunkHeader;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordIndex;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ConvertCommandTest {
  @TempDir Path dir;

  private Path file(String name, String text) throws Exception {
    Path f = dir.resolve(name);
    Files.writeString(f, text);
    return f;
  }

  private static Example dense(int label, float... values) {
    Example.Builder b = Example.newBuilder().setLabel(label);
    for (float v : values) {
      b.addDense(v);
    }
    return b.build();
  }

  @Test
  void csv_labelLast_default_withHeaderSkipped_crlfAndBom() throws Exception {
    Path in = file("d.csv", "\uFEFFa,b,label\r\n1.5,2,0\r\n\n-3,4e1,2\n");
    Run r =
        Run.psctl("convert", "--input", in.toString(), "--out", dir + "/out", "--skip-lines", "1");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(examples(dir.resolve("out-00000.recordio")))
        .containsExactly(dense(0, 1.5f, 2f), dense(2, -3f, 40f));
    assertThat(r.out())
        .contains("converted 2 records")
        .contains("features: 2 dense")
        .contains("classes seen: 2 (0: 1, 2: 1)")
        .contains("files: 1, chunks: 1");
  }

  @Test
  void csv_labelFirstAndNumbered_andTabDelimiter() throws Exception {
    Path in = file("d.tsv", "1\t0.5\t7\n3\t0.25\t8\n");
    assertThat(
            Run.psctl(
                    "convert",
                    "--input",
                    in.toString(),
                    "--out",
                    dir + "/first.recordio",
                    "--label-column",
                    "first",
                    "--delimiter",
                    "\\t",
                    "--format",
                    "csv")
                .code())
        .isZero();
    assertThat(examples(dir.resolve("first.recordio")))
        .containsExactly(dense(1, 0.5f, 7f), dense(3, 0.25f, 8f));

    assertThat(
            Run.psctl(
                    "convert",
                    "--input",
                    in.toString(),
                    "--out",
                    dir + "/mid.recordio",
                    "--label-column",
                    "2",
                    "--delimiter",
                    "tab")
                .code())
        .isZero();
    assertThat(examples(dir.resolve("mid.recordio")))
        .containsExactly(dense(7, 1f, 0.5f), dense(8, 3f, 0.25f));
  }

  @ParameterizedTest
  @EnumSource(Compressor.class)
  void csv_eachCompressor_shardsRoundRobin_chunked(Compressor c) throws Exception {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 25; i++) {
      sb.append(i).append(',').append(i % 3).append('\n');
    }
    Path in = file("n.csv", sb.toString());
    Run r =
        Run.psctl(
            "convert",
            "--input",
            in.toString(),
            "--out",
            dir + "/sh/data",
            "--compressor",
            c.toString().toUpperCase(),
            "--shards",
            "3",
            "--records-per-chunk",
            "4");
    assertThat(r.code()).as(r.err()).isZero();
    Path s0 = dir.resolve("sh/data-00000.recordio");
    Path s2 = dir.resolve("sh/data-00002.recordio");
    assertThat(examples(s0)).extracting(e -> (int) e.getDense(0)).startsWith(0, 3, 6).hasSize(9);
    assertThat(examples(s2)).extracting(e -> (int) e.getDense(0)).startsWith(2, 5).hasSize(8);
    List<ChunkHeader> headers = RecordIndex.scanHeaders(s0);
    assertThat(headers).extracting(ChunkHeader::records).containsExactly(4, 4, 1);
    assertThat(headers).allMatch(h -> h.compressor() == c);
    assertThat(r.out()).contains("files: 3, chunks: 7").contains("compressor: " + c);
  }

  @Test
  void csv_labelOutsideTheTrainingClasses_namesLineAndColumn_andLeavesNoOutput() throws Exception {
    Path train = file("t.csv", "1,2,dog\n3,4,cat\n");
    assertThat(Run.psctl("convert", "--input", train.toString(), "--out", dir + "/t").code())
        .isZero();
    Path in = file("bad.csv", "1,2,cat\n3,4,cow\n");
    Run r =
        Run.psctl(
            "convert",
            "--input",
            in.toString(),
            "--out",
            dir + "/bad",
            "--statistics-from",
            dir + "/t.dataset.pb");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err().strip())
        .isEqualTo(
            "psctl convert: "
                + in
                + " line 2, column 2 (0-based): label 'cow' is not one of the training data's"
                + " classes [cat, dog]");
    assertThat(dir.resolve("bad-00000.recordio")).doesNotExist();
  }

  @Test
  void csv_byteOrderMarkOnFirstDataLine_isIgnored() throws Exception {
    Path in = file("bom.csv", "\uFEFF4,1\n");
    assertThat(Run.psctl("convert", "--input", in.toString(), "--out", dir + "/b.recordio").code())
        .isZero();
    assertThat(examples(dir.resolve("b.recordio"))).containsExactly(dense(1, 4f));
  }

  @Test
  void csv_badFeatureAndRaggedRows_areClearErrors() throws Exception {
    Path in = file("f.csv", "1,x,0\n");
    assertThat(Run.psctl("convert", "--input", in.toString(), "--out", dir + "/o").err())
        .contains("line 1, column 1 (0-based): feature 'x' is not a number");
    Path ragged = file("r.csv", "1,2,0\n1,0\n");
    assertThat(Run.psctl("convert", "--input", ragged.toString(), "--out", dir + "/o").err())
        .contains("line 2: has 2 columns, expected 3 as on line 1");
    Path negative = file("n.csv", "1,-1\n");
    assertThat(Run.psctl("convert", "--input", negative.toString(), "--out", dir + "/o").err())
        .contains("label '-1' is not a class index");
  }

  @Test
  void usageErrors_exit2() throws Exception {
    Path in = file("u.csv", "1,0\n");
    assertThat(
            Run.psctl("convert", "--input", in.toString(), "--out", "o", "--label-column", "-2")
                .err())
        .contains(
            "--label-column must be first, last, a 0-based column number or a header name, got"
                + " '-2'");
    assertThat(
            Run.psctl("convert", "--input", in.toString(), "--out", "o", "--delimiter", "::").err())
        .contains("--delimiter must be one character, got '::'");
    assertThat(Run.psctl("convert", "--input", in.toString(), "--out", "o", "--shards", "0").code())
        .isEqualTo(2);
    assertThat(Run.psctl("convert", "--out", "o").err()).contains("--input");
    Run missing = Run.psctl("convert", "--input", dir + "/nope.csv", "--out", dir + "/o");
    assertThat(missing.code()).isEqualTo(1);
    assertThat(missing.err().strip())
        .isEqualTo("psctl convert: no such file: " + dir + "/nope.csv");
  }

  @Test
  void libsvm_oneBasedAutoDetected_plusMinusOneLabels_commentsIgnored() throws Exception {
    Path in = file("d.svm", "# header comment\n+1 1:0.5 3:2 # trailing\n-1 2:1\n\n1 qid:3 4:1\n");
    Run r = Run.psctl("convert", "--input", in.toString(), "--out", dir + "/s.recordio");
    assertThat(r.code()).as(r.err()).isZero();
    List<Example> ex = examples(dir.resolve("s.recordio"));
    assertThat(ex).extracting(Example::getLabel).containsExactly(1, 0, 1);
    assertThat(ex.get(0).getSparseIdsList()).containsExactly(0L, 2L);
    assertThat(ex.get(0).getSparseValuesList()).containsExactly(0.5f, 2f);
    assertThat(ex.get(2).getSparseIdsList()).containsExactly(3L);
    assertThat(r.out()).contains("1-based indices").contains("features: 4 sparse ids");
  }

  @Test
  void libsvm_zeroBasedDetected_orForced_multiclassLabelsKept() throws Exception {
    Path in = file("z.libsvm", "2 0:1 5:3\n0 1:1\n");
    Run r = Run.psctl("convert", "--input", in.toString(), "--out", dir + "/z.recordio");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("0-based indices").contains("classes seen: 2 (0: 1, 2: 1)");
    assertThat(examples(dir.resolve("z.recordio")).get(0).getSparseIdsList())
        .containsExactly(0L, 5L);

    Path one = file("one.txt", "1 1:1 5:3\n");
    Run forced =
        Run.psctl(
            "convert",
            "--input",
            one.toString(),
            "--out",
            dir + "/f.recordio",
            "--index-base",
            "0");
    assertThat(forced.code()).isZero();
    assertThat(examples(dir.resolve("f.recordio")).get(0).getSparseIdsList())
        .containsExactly(1L, 5L);

    Run wrong =
        Run.psctl(
            "convert", "--input", in.toString(), "--out", dir + "/w.recordio", "--index-base", "1");
    assertThat(wrong.code()).isEqualTo(1);
    assertThat(wrong.err()).contains("line 1: feature index 0 in a 1-based file");
  }

  @Test
  void libsvm_malformedTokens_nameTheLine() throws Exception {
    Path in = file("m.svm", "1 1:1\n1 2:x\n");
    assertThat(Run.psctl("convert", "--input", in.toString(), "--out", dir + "/m").err())
        .contains("line 2: feature value in '2:x' is not a number");
    Path lab = file("l.svm", "yes 1:1\n");
    assertThat(Run.psctl("convert", "--input", lab.toString(), "--out", dir + "/m").err())
        .contains("line 1: label 'yes' is not a number");
  }

  @Test
  void formatFromExtension() {
    assertThat(ConvertCommand.formatFromExtension(Path.of("a.SVM"))).isEqualTo("libsvm");
    assertThat(ConvertCommand.formatFromExtension(Path.of("a.txt"))).isEqualTo("libsvm");
    assertThat(ConvertCommand.formatFromExtension(Path.of("a.data"))).isEqualTo("csv");
  }
}
