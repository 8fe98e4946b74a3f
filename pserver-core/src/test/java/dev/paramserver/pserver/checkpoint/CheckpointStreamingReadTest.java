package dev.paramserver.pserver.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The streamed checkpoint reader: exact round trips, and clear errors for damaged files. */
@Timeout(60)
class CheckpointStreamingReadTest {
  private static final int WIDTH = 4;
  private static final int CHUNK_ROWS = 16384;

  private Path dir;

  @BeforeEach
  void setUp() {
    dir = TempDirs.create("ckpt-stream");
  }

  @AfterEach
  void tearDown() {
    TempDirs.deleteRecursively(dir);
  }

  /** A shard with a dense block and a sparse table split into several chunk entries. */
  private static ShardCheckpoint checkpoint() {
    Random random = new Random(14);
    ShardCheckpoint.Builder shard =
        ShardCheckpoint.newBuilder()
            .setIndex(2)
            .setStep(77)
            .setInitId("init-14")
            .setCreatedMs(1_700_000_000_000L)
            .addBlocks(
                BlockCheckpoint.newBuilder()
                    .setName("w")
                    .setBlock(0)
                    .setValues(randomBytes(random, 4 * 100))
                    .addSlots(randomBytes(random, 4 * 100))
                    .setUpdates(5));
    int rows = 3 * CHUNK_ROWS + 123;
    for (int first = 0; first < rows; first += CHUNK_ROWS) {
      int n = Math.min(CHUNK_ROWS, rows - first);
      SparseTableCheckpoint.Builder chunk =
          SparseTableCheckpoint.newBuilder().setName("emb").setWidth(WIDTH);
      for (int i = 0; i < n; i++) {
        chunk.addRowIds(random.nextLong()).addRowUpdates(random.nextInt(1000));
      }
      chunk
          .setValues(randomBytes(random, 4 * WIDTH * n))
          .addSlots(randomBytes(random, 4 * WIDTH * n))
          .addSlots(randomBytes(random, 4 * WIDTH * n));
      shard.addSparseTables(chunk);
    }
    return shard.build();
  }

  private static ByteString randomBytes(Random random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return ByteString.copyFrom(b);
  }

  private int writeFile(Path file, ShardCheckpoint checkpoint) throws IOException {
    byte[] bytes = checkpoint.toByteArray();
    Files.write(file, bytes);
    CRC32 crc = new CRC32();
    crc.update(bytes);
    return (int) crc.getValue();
  }

  @Test
  void severalTableEntries_roundTripExactly() throws Exception {
    ShardCheckpoint original = checkpoint();
    assertThat(original.getSparseTablesCount()).isEqualTo(4);
    Path file = dir.resolve("ps-2.ckpt");
    int crc = writeFile(file, original);

    assertThat(CheckpointStore.read(file.toString(), crc)).isEqualTo(original);
  }

  @Test
  void corruptByteInTheMiddle_isAClearErrorNamingTheFile() throws Exception {
    Path file = dir.resolve("ps-2.ckpt");
    int crc = writeFile(file, checkpoint());
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x5A;
    Files.write(file, bytes);

    assertThatThrownBy(() -> CheckpointStore.read(file.toString(), crc))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(file.toString());
  }

  @Test
  void truncatedFile_isAClearErrorNamingTheFile() throws Exception {
    Path file = dir.resolve("ps-2.ckpt");
    int crc = writeFile(file, checkpoint());
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(bytes, bytes.length * 2 / 3));

    assertThatThrownBy(() -> CheckpointStore.read(file.toString(), crc))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(file.toString())
        .hasMessageContaining("not a ShardCheckpoint");
  }

  @Test
  void missingFile_isAClearErrorNamingTheFile() {
    String path = dir.resolve("absent.ckpt").toString();
    assertThatThrownBy(() -> CheckpointStore.read(path, 0))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(path)
        .hasMessageContaining("does not exist");
  }
}
