package dev.paramserver.master.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.Chunk;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.testsupport.S3Server;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Indexing RecordIO objects in a real S3-compatible server (s3proxy) by ranged header reads. */
class DatasetIndexerS3Test {
  private static S3Server s3;
  private static Storage storage;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    s3 = S3Server.start();
    s3.createBucket("jobs");
    storage =
        Storage.create(
            new S3Settings(s3.endpoint(), null, true, S3Server.ACCESS_KEY, S3Server.SECRET_KEY),
            "paramserver.master.s3");
  }

  @AfterAll
  static void stop() {
    storage.close();
    s3.close();
  }

  @Test
  void index_s3Glob_locatesChunksOfEveryObject() throws Exception {
    storage.upload(
        DatasetIndexerTest.write(dir.resolve("a.rio"), 10, 4, Compressor.SNAPPY),
        "s3://jobs/d/train-0.rio");
    storage.upload(
        DatasetIndexerTest.write(dir.resolve("b.rio"), 6, 3, Compressor.NONE),
        "s3://jobs/d/train-1.rio");
    DatasetIndex index = new DatasetIndexer(storage).index(List.of("s3://jobs/d/train-*.rio"), 2);
    IndexedDataset d = IndexedDataset.of(index);

    assertThat(d.files()).isEqualTo(2);
    assertThat(d.chunks()).isEqualTo(5);
    assertThat(d.records()).isEqualTo(16);
    assertThat(d.chunksOf(1))
        .extracting(Chunk::getPath)
        .containsExactly("s3://jobs/d/train-0.rio", "s3://jobs/d/train-1.rio");
  }

  @Test
  void index_globMatchingNoObject_namesTheGlob() {
    assertThatThrownBy(() -> new DatasetIndexer(storage).index(List.of("s3://jobs/none/*.rio"), 1))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("no object matches 's3://jobs/none/*.rio'");
  }
}
