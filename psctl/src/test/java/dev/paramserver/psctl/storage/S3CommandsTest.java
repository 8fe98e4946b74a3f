package dev.paramserver.psctl.storage;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.onnx.proto.ModelProto;
import dev.paramserver.psctl.Run;
import dev.paramserver.psctl.model.InProcessTraining;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.testsupport.S3Server;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code psctl convert --output s3://…} and {@code psctl inspect s3://…} against s3proxy. */
class S3CommandsTest {
  private static S3Server s3;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    s3 = S3Server.start();
    s3.createBucket("data");
    // the AWS SDK's default credential chain reads these system properties (as it reads
    // AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY from the environment)
    System.setProperty("aws.accessKeyId", S3Server.ACCESS_KEY);
    System.setProperty("aws.secretAccessKey", S3Server.SECRET_KEY);
    System.setProperty("aws.disableEc2Metadata", "true");
  }

  @AfterAll
  static void stop() {
    System.clearProperty("aws.accessKeyId");
    System.clearProperty("aws.secretAccessKey");
    s3.close();
  }

  private String[] with(String... args) {
    String[] out = new String[args.length + 3];
    System.arraycopy(args, 0, out, 0, args.length);
    out[args.length] = "--s3-endpoint";
    out[args.length + 1] = s3.endpoint();
    out[args.length + 2] = "--s3-path-style";
    return out;
  }

  private Path csv() throws Exception {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 30; i++) {
      b.append(i * 0.5).append(',').append(1 - i * 0.1).append(',').append(i % 3).append('\n');
    }
    return Files.writeString(dir.resolve("in.csv"), b.toString());
  }

  @Test
  void convertToS3_thenInspectTheObjects() throws Exception {
    Run c =
        Run.psctl(
            with(
                "convert",
                "--input",
                csv().toString(),
                "--out",
                "s3://data/conv/train",
                "--shards",
                "2",
                "--records-per-chunk",
                "4"));
    assertThat(c.code()).as(c.err()).isZero();
    assertThat(c.out())
        .contains("converted 30 records")
        .contains("s3://data/conv/train-00000.recordio: 15 records")
        .contains("s3://data/conv/train-00001.recordio: 15 records")
        .contains("dataset info: s3://data/conv/train.dataset.pb");
    try (Stream<Path> s = Files.list(s3.bucketDir("data").resolve("conv"))) {
      assertThat(s.map(p -> p.getFileName().toString()).sorted().toList())
          .containsExactly("train-00000.recordio", "train-00001.recordio", "train.dataset.pb");
    }

    Run i = Run.psctl(with("inspect", "s3://data/conv/train-*.recordio", "--records", "1"));
    assertThat(i.code()).as(i.err()).isZero();
    assertThat(i.out())
        .contains("s3://data/conv/train-00000.recordio: 4 chunks, 15 records")
        .contains("s3://data/conv/train-00001.recordio: 4 chunks, 15 records")
        .contains("total: 2 files, 8 chunks, 30 records");
  }

  @Test
  void convertToAMalformedUri_failsBeforeReadingNamingIt() throws Exception {
    Run c = Run.psctl(with("convert", "--input", csv().toString(), "--out", "s3:/data/x"));
    assertThat(c.code()).isEqualTo(1);
    assertThat(c.err()).contains("'s3:/data/x' is not an S3 URI");
  }

  @Test
  void convertToAMissingBucket_failsNamingTheBucket() throws Exception {
    Run c = Run.psctl(with("convert", "--input", csv().toString(), "--out", "s3://nobucket/x/t"));
    assertThat(c.code()).isEqualTo(1);
    assertThat(c.err()).contains("s3://nobucket/x/t").contains("bucket 'nobucket' does not exist");
  }

  @Test
  void inspectAMissingObject_failsNamingTheUri() {
    Run i = Run.psctl(with("inspect", "s3://data/none/*.recordio"));
    assertThat(i.code()).isEqualTo(1);
    assertThat(i.err()).contains("no object matches 's3://data/none/*.recordio'");
    Run j = Run.psctl(with("inspect", "s3://data/none.recordio"));
    assertThat(j.code()).isEqualTo(1);
    assertThat(j.err()).contains("no object matches 's3://data/none.recordio'");
  }

  /** psctl evaluate, predict and export with the model, the data and the outputs in S3. */
  @Test
  void modelCommands_readAndWriteS3Locations() throws Exception {
    Path iris = Path.of(S3CommandsTest.class.getResource("/iris.csv").toURI());
    Run c =
        Run.psctl(
            with(
                "convert",
                "--input",
                iris.toString(),
                "--out",
                "s3://data/iris/iris",
                "--standardize"));
    assertThat(c.code()).as(c.err()).isZero();
    // the same data locally, to train the model and to compare with
    InProcessTraining.Iris trained = InProcessTraining.iris(dir);
    Path localData = trained.data();
    Path model = trained.model();
    try (Storage storage =
        Storage.create(new S3Settings(s3.endpoint(), null, true, null, null), "test")) {
      storage.upload(model, "s3://data/models/iris.pb");
    }

    Run e =
        Run.psctl(
            with(
                "evaluate",
                "--model",
                "s3://data/models/iris.pb",
                "--data",
                "s3://data/iris/iris-*.recordio",
                "-o",
                "json"));
    assertThat(e.code()).as(e.err()).isZero();
    Run eLocal =
        Run.psctl(
            "evaluate", "--model", model.toString(), "--data", localData.toString(), "-o", "json");
    assertThat(e.out()).isEqualTo(eLocal.out()).contains("\"samples\" : 150");

    Run p =
        Run.psctl(
            with(
                "predict",
                "--model",
                "s3://data/models/iris.pb",
                "--data",
                "s3://data/iris/iris-00000.recordio",
                "--out",
                "s3://data/out/pred.csv"));
    assertThat(p.code()).as(p.err()).isZero();
    assertThat(p.out()).contains("wrote 150 predictions to s3://data/out/pred.csv");
    List<String> lines = Files.readAllLines(s3.bucketDir("data").resolve("out/pred.csv"));
    assertThat(lines).hasSize(151);
    assertThat(lines.get(0)).isEqualTo("index,label,predicted,p0,p1,p2");
    assertThat(lines.get(1)).startsWith("0,setosa,");

    Run x =
        Run.psctl(
            with(
                "export",
                "--model",
                "s3://data/models/iris.pb",
                "--out",
                "s3://data/out/iris.onnx"));
    assertThat(x.code()).as(x.err()).isZero();
    byte[] onnx = Files.readAllBytes(s3.bucketDir("data").resolve("out/iris.onnx"));
    assertThat(ModelProto.parseFrom(onnx).getGraph().getOutputList())
        .extracting(o -> o.getName())
        .contains("probabilities", "predicted");
  }

  @Test
  void modelCommands_nameAMissingModelObject() {
    Run e =
        Run.psctl(
            with("evaluate", "--model", "s3://data/models/none.pb", "--data", "s3://data/x/*"));
    assertThat(e.code()).isEqualTo(1);
    assertThat(e.err()).contains("s3://data/models/none.pb");
  }
}
