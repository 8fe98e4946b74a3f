package dev.paramserver.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.CorruptRecordException;
import dev.paramserver.recordio.RangeSource;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.recordio.RecordReader;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.testsupport.S3Server;
import dev.paramserver.testsupport.TempDirs;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@link Storage} against a real S3-compatible server (s3proxy in a child process). */
class StorageS3Test {
  private static S3Server server;
  private static Storage storage;
  private static Path tmp;

  @BeforeAll
  static void start() {
    // the default credential chain must not ask a cloud metadata service from a test
    System.setProperty("aws.disableEc2Metadata", "true");
    server = S3Server.start();
    server.createBucket("data");
    storage = Storage.create(settings(S3Server.SECRET_KEY), "paramserver.test.s3");
    tmp = TempDirs.create("storage-test");
  }

  @AfterAll
  static void stop() {
    if (storage != null) {
      storage.close();
    }
    if (server != null) {
      server.close();
    }
    TempDirs.deleteRecursively(tmp);
  }

  private static S3Settings settings(String secret) {
    return new S3Settings(server.endpoint(), null, true, S3Server.ACCESS_KEY, secret);
  }

  /** Writes a RecordIO file of {@code records} records, {@code perChunk} to a chunk, uploads it. */
  private static Path putRecordIo(String key, int records, int perChunk) throws Exception {
    Path file = Files.createTempFile(tmp, "rio", ".recordio");
    try (RecordWriter w = RecordWriter.create(file, Compressor.SNAPPY, perChunk)) {
      for (int i = 0; i < records; i++) {
        w.write((key + "#" + i).getBytes(StandardCharsets.UTF_8));
      }
    }
    storage.upload(file, "s3://data/" + key);
    return file;
  }

  @Test
  void scanAndReadChunks_byRanges_matchTheLocalFile() throws Exception {
    Path local = putRecordIo("ranged/a.recordio", 1000, 64);
    List<ChunkInfo> remote = storage.scan("s3://data/ranged/a.recordio");
    List<ChunkInfo> expected = RecordIndex.scan(local);

    assertThat(remote).hasSize(expected.size()).hasSizeGreaterThan(10);
    for (int i = 0; i < remote.size(); i++) {
      assertThat(remote.get(i).location()).isEqualTo("s3://data/ranged/a.recordio");
      assertThat(remote.get(i).offset()).isEqualTo(expected.get(i).offset());
      assertThat(remote.get(i).length()).isEqualTo(expected.get(i).length());
    }
    // a task's chunks: the 3rd to 5th only
    List<byte[]> records = storage.readChunks(remote.subList(2, 5));
    List<byte[]> want = RecordReader.readChunks(expected.subList(2, 5));
    assertThat(records).hasSameSizeAs(want);
    assertThat(new String(records.get(0), StandardCharsets.UTF_8))
        .isEqualTo("ranged/a.recordio#128");
    for (int i = 0; i < want.size(); i++) {
      assertThat(records.get(i)).isEqualTo(want.get(i));
    }
  }

  @Test
  void readRange_readsOnlyTheBytesAsked_andRefusesPastTheEnd() throws Exception {
    Path local = putRecordIo("ranged/b.recordio", 10, 5);
    byte[] all = Files.readAllBytes(local);
    try (RangeSource src = storage.openRange("s3://data/ranged/b.recordio")) {
      assertThat(src.size()).isEqualTo(all.length);
      ByteBuffer b = ByteBuffer.allocate(7);
      src.readFully(b, 3);
      assertThat(b.array()).isEqualTo(java.util.Arrays.copyOfRange(all, 3, 10));
      assertThatThrownBy(() -> src.readFully(ByteBuffer.allocate(8), all.length - 4))
          .isInstanceOf(java.io.EOFException.class)
          .hasMessageContaining("s3://data/ranged/b.recordio");
    }
  }

  @Test
  void corruptObject_isReportedWithItsUriAndOffset() throws Exception {
    Path f = Files.createTempFile(tmp, "bad", ".recordio");
    Files.write(f, "definitely not a RecordIO chunk header".getBytes(StandardCharsets.UTF_8));
    storage.upload(f, "s3://data/bad/x.recordio");
    assertThatThrownBy(() -> storage.scan("s3://data/bad/x.recordio"))
        .isInstanceOf(CorruptRecordException.class)
        .hasMessageContaining("bad magic")
        .hasMessageContaining("offset 0 of s3://data/bad/x.recordio");
  }

  @Test
  void expandGlobs_listsByPrefixAndMatchesOneLevelPerStar() throws Exception {
    for (String k :
        List.of(
            "glob/train-0.rio", "glob/train-1.rio", "glob/test-0.rio", "glob/sub/train-2.rio")) {
      putRecordIo(k, 1, 1);
    }
    assertThat(storage.expandGlobs(List.of("s3://data/glob/train-*.rio")))
        .containsExactly("s3://data/glob/train-0.rio", "s3://data/glob/train-1.rio");
    assertThat(storage.expandGlobs(List.of("s3://data/glob/**train-*.rio")))
        .containsExactly(
            "s3://data/glob/sub/train-2.rio",
            "s3://data/glob/train-0.rio",
            "s3://data/glob/train-1.rio");
    assertThat(storage.expandGlobs(List.of("s3://data/glob/test-0.rio")))
        .containsExactly("s3://data/glob/test-0.rio");
    assertThatThrownBy(() -> storage.expandGlobs(List.of("s3://data/glob/nothing-*.rio")))
        .hasMessageContaining("no object matches 's3://data/glob/nothing-*.rio'");
    assertThatThrownBy(() -> storage.expandGlobs(List.of("s3://data/glob/absent.rio")))
        .hasMessageContaining("no object matches 's3://data/glob/absent.rio'");
  }

  @Test
  void expandGlobs_skipsTheDatasetInfoObjectBesideTheData() throws Exception {
    putRecordIo("conv/train-00000.recordio", 1, 1);
    Path info = Files.writeString(tmp.resolve("info"), "a DatasetInfo, not RecordIO");
    storage.upload(info, "s3://data/conv/train.dataset.pb");

    assertThat(storage.expandGlobs(List.of("s3://data/conv/train*")))
        .containsExactly("s3://data/conv/train-00000.recordio");
    assertThatThrownBy(() -> storage.expandGlobs(List.of("s3://data/conv/*.pb")))
        .hasMessageContaining(
            "'s3://data/conv/*.pb' matches only the dataset info file(s)"
                + " [s3://data/conv/train.dataset.pb]");
  }

  @Test
  void localGlobs_stillWork_besideS3Ones() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("localglob"));
    Files.writeString(dir.resolve("a.rio"), "");
    putRecordIo("mixed/b.rio", 1, 1);
    assertThat(storage.expandGlobs(List.of(dir + "/*.rio", "s3://data/mixed/*.rio")))
        .containsExactly(dir.resolve("a.rio").toString(), "s3://data/mixed/b.rio");
  }

  @Test
  void badUris_areRefusedNamingTheUri() {
    assertThatThrownBy(() -> storage.openRange("s3:/data/x"))
        .hasMessageContaining("'s3:/data/x' is not an S3 URI");
    assertThatThrownBy(() -> storage.openRange("s3:///x"))
        .hasMessageContaining("'s3:///x' names no bucket");
    assertThatThrownBy(() -> storage.openRange("s3://Bad_Bucket/x"))
        .hasMessageContaining("invalid bucket name 'Bad_Bucket'");
    assertThatThrownBy(() -> storage.expandGlobs(List.of("gs://data/x")))
        .hasMessageContaining("'gs://data/x' uses the unsupported scheme 'gs'");
    assertThatThrownBy(() -> new S3Settings("minio:9000", null, true, null, null))
        .hasMessageContaining("S3 endpoint 'minio:9000' must be an http:// or https:// URL");
    assertThatThrownBy(() -> new S3Settings(null, null, true, "ak", null))
        .hasMessageContaining("access-key and secret-key go together");
  }

  @Test
  void missingObjectAndBucket_areNotFoundNamingTheUri() {
    assertThatThrownBy(() -> storage.openRange("s3://data/missing.recordio"))
        .isInstanceOfSatisfying(
            StorageException.class,
            e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.NOT_FOUND))
        .hasMessageContaining("s3://data/missing.recordio")
        .hasMessageContaining("no such object");
    assertThatThrownBy(() -> storage.openStream("s3://nobucket/x").read())
        .isInstanceOf(StorageException.class)
        .hasMessageContaining("s3://nobucket/x")
        .hasMessageContaining("bucket 'nobucket' does not exist");
  }

  @Test
  void wrongSecret_isAccessDeniedNamingTheSettings() {
    try (Storage wrong = Storage.create(settings("not-the-secret"), "paramserver.master.s3")) {
      assertThatThrownBy(() -> wrong.openRange("s3://data/ranged/a.recordio"))
          .isInstanceOfSatisfying(
              StorageException.class,
              e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.ACCESS_DENIED))
          .hasMessageContaining("s3://data/ranged/a.recordio")
          .hasMessageContaining("paramserver.master.s3.access-key");
    }
  }

  @Test
  void noCredentialsAnywhere_isReportedNamingTheSettings() {
    // no keys set and (in the test environment) none in the environment or profile files
    S3Settings none = new S3Settings(server.endpoint(), null, true, null, null);
    try (Storage anon = Storage.create(none, "paramserver.trainer.s3")) {
      assertThatThrownBy(() -> anon.openRange("s3://data/any"))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("s3://data/any")
          .hasMessageContaining("paramserver.trainer.s3.access-key");
    }
  }

  @Test
  void createWriteThenStream_roundTrips_andDeleteRemoves() throws Exception {
    byte[] body = new byte[300_000];
    new java.util.Random(7).nextBytes(body);
    try (OutputStream out = storage.create("s3://data/models/m.pb")) {
      out.write(body);
    }
    assertThat(storage.exists("s3://data/models/m.pb")).isTrue();
    try (InputStream in = storage.openStream("s3://data/models/m.pb")) {
      assertThat(in.readAllBytes()).isEqualTo(body);
    }
    storage.delete("s3://data/models/m.pb");
    assertThat(storage.exists("s3://data/models/m.pb")).isFalse();
    List<String> leftovers = new ArrayList<>();
    try (var s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      s.filter(p -> p.getFileName().toString().startsWith("paramserver-upload-"))
          .forEach(p -> leftovers.add(p.toString()));
    }
    assertThat(leftovers).as("staging files left behind").isEmpty();
  }

  @Test
  void locationResolve_joinsKeysAndPaths() {
    assertThat(Location.parse("s3://bkt/ckpt").resolve("x.ckpt").text())
        .isEqualTo("s3://bkt/ckpt/x.ckpt");
    assertThat(Location.parse("s3://bkt/").resolve("x").text()).isEqualTo("s3://bkt/x");
    assertThat(Location.parse("/tmp/c").resolve("x").text()).isEqualTo("/tmp/c/x");
  }
}
