package dev.paramserver.pserver.wal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Segments, cuts, replay and torn tails of the write-ahead log, on a real directory. */
class WriteAheadLogTest {
  private Path dir;

  @BeforeEach
  void setUp() {
    dir = TempDirs.create("wal");
  }

  @AfterEach
  void tearDown() {
    TempDirs.deleteRecursively(dir);
  }

  private static WalRecord record(long step) {
    return WalRecord.newBuilder()
        .setInitId("i")
        .addPushes(PushGradientsRequest.newBuilder().setTrainerId("t").setStep(step))
        .build();
  }

  private static List<Long> replay(WriteAheadLog log, long from) {
    List<Long> steps = new ArrayList<>();
    log.open(0, from, r -> steps.add(r.getPushes(0).getStep()));
    return steps;
  }

  @ParameterizedTest
  @EnumSource(WriteAheadLog.SyncMode.class)
  void appendedRecords_areReplayedFromTheCut_afterACrash(WriteAheadLog.SyncMode sync) {
    WriteAheadLog log = new WriteAheadLog(dir, sync, Duration.ofMillis(5));
    assertThat(replay(log, 0)).isEmpty();
    log.append(record(1));
    long cut = log.cut();
    log.append(record(2));
    log.append(record(3));
    // a crash: the log is never closed

    WriteAheadLog restarted = new WriteAheadLog(dir, sync, Duration.ofMillis(5));
    assertThat(replay(restarted, cut)).containsExactly(2L, 3L);
    restarted.append(record(4));
    restarted.close();
    log.close();

    WriteAheadLog again = new WriteAheadLog(dir, sync, Duration.ofMillis(5));
    assertThat(replay(again, cut)).containsExactly(2L, 3L, 4L);
    again.close();
  }

  @Test
  void tornTail_isSkipped_andReported_andLaterSegmentsStillReplay() throws IOException {
    WriteAheadLog log = new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    replay(log, 0);
    long first = log.segment();
    log.append(record(1));
    log.append(record(2));
    log.close();
    Path segment = dir.resolve(String.format("ps-0-wal-%020d.log", first));
    long whole = Files.size(segment);
    // a record cut short: a frame announcing 100 bytes with only 3 written
    Files.write(segment, new byte[] {100, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9}, StandardOpenOption.APPEND);

    WriteAheadLog restarted =
        new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    List<Long> steps = new ArrayList<>();
    WriteAheadLog.Replayed r =
        restarted.open(0, first, rec -> steps.add(rec.getPushes(0).getStep()));
    restarted.append(record(3));
    restarted.close();

    assertThat(steps).containsExactly(1L, 2L);
    assertThat(r.tornBytes()).isEqualTo(Files.size(segment) - whole);
    WriteAheadLog again = new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    assertThat(replay(again, first)).containsExactly(1L, 2L, 3L);
    again.close();
  }

  @Test
  void corruptRecord_endsItsSegment() throws IOException {
    WriteAheadLog log = new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    replay(log, 0);
    long first = log.segment();
    log.append(record(1));
    log.append(record(2));
    log.close();
    Path segment = dir.resolve(String.format("ps-0-wal-%020d.log", first));
    byte[] bytes = Files.readAllBytes(segment);
    bytes[bytes.length - 1] ^= 0x55; // the last record's CRC no longer matches
    Files.write(segment, bytes);

    WriteAheadLog restarted =
        new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    assertThat(replay(restarted, first)).containsExactly(1L);
    restarted.close();
  }

  @Test
  void deleteBefore_removesOnlyOlderSegments_andOpenWithoutACheckpointStartsEmpty() {
    WriteAheadLog log = new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    replay(log, 0);
    long a = log.segment();
    log.append(record(1));
    long b = log.cut();
    log.append(record(2));
    long c = log.cut();
    log.deleteBefore(b);
    assertThat(log.segments(0)).containsExactly(b, c);
    log.close();

    WriteAheadLog fresh = new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    assertThat(replay(fresh, 0)).isEmpty();
    assertThat(fresh.segments(0)).containsExactly(fresh.segment());
    assertThat(fresh.segment()).isGreaterThan(a);
    fresh.close();
  }

  @Test
  void aDamagedRecordInTheMiddle_stopsRecovery_namingTheFileAndOffset() throws IOException {
    WriteAheadLog log = new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    replay(log, 0);
    long first = log.segment();
    for (long step = 1; step <= 5; step++) {
      log.append(record(step));
    }
    log.close();
    Path segment = dir.resolve(String.format("ps-0-wal-%020d.log", first));
    byte[] bytes = Files.readAllBytes(segment);
    int frame = bytes.length / 5; // every record has the same size
    bytes[frame + frame / 2] ^= 0x5a; // a flipped byte in record 2 of 5
    Files.write(segment, bytes);

    WriteAheadLog restarted =
        new WriteAheadLog(dir, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(5));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> replay(restarted, first))
        .isInstanceOfSatisfying(
            CorruptLogException.class,
            e -> {
              assertThat(e.file()).isEqualTo(segment);
              assertThat(e.offset()).isEqualTo(frame);
              assertThat(e.getMessage()).contains(segment.toString()).contains("offset " + frame);
            });
    assertThat(segment).as("the segment is kept").exists();
    restarted.close();
  }

  @Test
  void aFailedFsync_failsTheLogForGood_andTellsItsListenerOnce() {
    WriteAheadLog log = new WriteAheadLog(dir, WriteAheadLog.SyncMode.ALWAYS, Duration.ofMillis(5));
    replay(log, 0);
    List<String> told = new java.util.concurrent.CopyOnWriteArrayList<>();
    log.onFailure(told::add);
    log.append(record(1));
    log.disk(
        new WalDisk() {
          @Override
          public void force(java.nio.channels.FileChannel ch) throws IOException {
            throw new IOException("Input/output error (injected)");
          }
        });
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> log.append(record(2)))
        .hasMessageContaining("fsync")
        .hasMessageContaining("Input/output error");
    log.disk(WalDisk.DIRECT); // the disk answers again: the log stays failed
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> log.append(record(3)))
        .hasMessageContaining("the write-ahead log failed");
    assertThat(told).singleElement().asString().contains("Input/output error");
    assertThat(log.failure()).contains("fsync");
    log.close();
  }

  @Test
  void aFailedBackgroundFsync_inBatchMode_failsTheLog() {
    WriteAheadLog log = new WriteAheadLog(dir, WriteAheadLog.SyncMode.BATCH, Duration.ofMillis(5));
    replay(log, 0);
    List<String> told = new java.util.concurrent.CopyOnWriteArrayList<>();
    log.onFailure(told::add);
    log.disk(
        new WalDisk() {
          @Override
          public void force(java.nio.channels.FileChannel ch) throws IOException {
            throw new IOException("Input/output error (injected)");
          }
        });
    log.append(record(1)); // batch: answered before the fsync
    dev.paramserver.testsupport.Poll.until(
        Duration.ofSeconds(10), () -> !told.isEmpty(), "the background fsync failed");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> log.append(record(2)))
        .hasMessageContaining("the write-ahead log failed");
    log.close();
  }
}
