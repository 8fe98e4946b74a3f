package dev.paramserver.master.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.proto.tensorboard.Event;
import dev.paramserver.proto.tensorboard.Summary;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunTrackerTest {
  @TempDir Path dir;

  private static JobView.Pass pass(int p, Long endedMs, Double testLoss) {
    return new JobView.Pass(
        p,
        10_000L + 10_000L * p,
        endedMs,
        1000L,
        0,
        0,
        0.5 / (p + 1),
        testLoss,
        testLoss == null ? null : 0.9,
        testLoss == null ? null : 0.95);
  }

  private static JobView view(String state, List<JobView.Pass> passes) {
    JobView.Job job =
        new JobView.Job(
            state, "", "m", "a", 0, 2, new JobView.Tasks(0, 0, 0, 0), 1, 1, null, 0, 0, null, 0, 0);
    return new JobView(1L, true, job, passes, null, List.of(), List.of(), List.of());
  }

  /** Reads an event file back: checks both masked CRC-32Cs of every record and parses it. */
  static List<Event> readEvents(Path file) throws Exception {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
    List<Event> out = new ArrayList<>();
    while (b.hasRemaining()) {
      byte[] len = new byte[8];
      b.get(len);
      long length = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getLong();
      assertThat(b.getInt()).isEqualTo(TensorBoardWriter.maskedCrc(len, 0, 8));
      byte[] data = new byte[(int) length];
      b.get(data);
      assertThat(b.getInt()).isEqualTo(TensorBoardWriter.maskedCrc(data, 0, data.length));
      out.add(Event.parseFrom(data));
    }
    return out;
  }

  @Test
  void maskedCrc_matchesTensorFlowsKnownValue() {
    // crc32c("123456789") = 0xE3069283, masked as TensorFlow's crc32c::Mask does
    int crc = 0xE3069283;
    int expected = ((crc >>> 15) | (crc << 17)) + 0xa282ead8;
    assertThat(TensorBoardWriter.maskedCrc("123456789".getBytes(), 0, 9)).isEqualTo(expected);
  }

  @Test
  void anEndedPassIsWrittenOnceItIsEvaluated_toTheJsonLinesAndTheEventFile() throws Exception {
    Path metrics = dir.resolve("run").resolve("metrics.jsonl");
    Path tb = dir.resolve("tb");
    RunTracker t = new RunTracker(metrics, tb, "host");
    // pass 0 ended, not yet evaluated: nothing yet; pass 1 running
    t.onView(view("RUNNING", List.of(pass(0, 12_000L, null), pass(1, null, null))), 10, 13_000);
    assertThat(metrics).doesNotExist();
    t.onView(view("RUNNING", List.of(pass(0, 12_000L, 0.4), pass(1, null, null))), 20, 14_000);
    // the job ended: pass 1 is written even without an evaluation; pass 0 is not written again
    t.onView(view("FINISHED", List.of(pass(0, 12_000L, 0.4), pass(1, 22_000L, null))), 30, 21_000);
    t.close();

    List<String> lines = Files.readAllLines(metrics);
    assertThat(lines).hasSize(2);
    JsonNode first = new ObjectMapper().readTree(lines.get(0));
    assertThat(first.get("pass").asInt()).isEqualTo(1);
    assertThat(first.get("step").asLong()).isEqualTo(20);
    assertThat(first.get("trainLoss").asDouble()).isEqualTo(0.5);
    assertThat(first.get("testLoss").asDouble()).isEqualTo(0.4);
    assertThat(first.get("accuracy").asDouble()).isEqualTo(0.9);
    assertThat(first.get("auc").asDouble()).isEqualTo(0.95);
    assertThat(first.get("samplesPerSecond").asDouble()).isEqualTo(500.0); // 1000 in 2 s
    assertThat(first.get("time").asText()).isEqualTo("1970-01-01T00:00:14Z");
    JsonNode second = new ObjectMapper().readTree(lines.get(1));
    assertThat(second.get("pass").asInt()).isEqualTo(2);
    assertThat(second.get("testLoss").isNull()).isTrue();

    try (var files = Files.list(tb)) {
      Path file = files.findFirst().orElseThrow();
      assertThat(file.getFileName().toString()).isEqualTo("events.out.tfevents.14.host");
      List<Event> events = readEvents(file);
      assertThat(events).hasSize(3);
      assertThat(events.get(0).getFileVersion()).isEqualTo("brain.Event:2");
      Event e = events.get(1);
      assertThat(e.getStep()).isEqualTo(1);
      assertThat(e.getWallTime()).isEqualTo(14.0);
      assertThat(e.getSummary().getValueList())
          .extracting(Summary.Value::getTag)
          .containsExactly("loss/train", "loss/test", "accuracy", "auc", "samples_per_second");
      assertThat(e.getSummary().getValue(1).getSimpleValue()).isEqualTo(0.4f);
      assertThat(events.get(2).getSummary().getValueList())
          .extracting(Summary.Value::getTag)
          .containsExactly("loss/train", "samples_per_second");
    }

    // a new leader with the same file does not write the passes again
    RunTracker again = new RunTracker(metrics, null, "host");
    again.onView(
        view("FINISHED", List.of(pass(0, 12_000L, 0.4), pass(1, 22_000L, null))), 30, 30_000);
    assertThat(Files.readAllLines(metrics)).hasSize(2);
  }

  @Test
  void beforeTheFirstSampleNothingIsWritten() throws Exception {
    Path metrics = dir.resolve("metrics.jsonl");
    new RunTracker(metrics, null, "host").onView(JobView.unsampled(List.of()), 1, 20_000);
    assertThat(metrics).doesNotExist();
  }

  @Test
  void withoutAFileOrDirectoryNothingIsWritten() {
    RunTracker t = new RunTracker(null, null, "host");
    assertThat(t.enabled()).isFalse();
    t.onView(view("FINISHED", List.of(pass(0, 12_000L, 0.4))), 1, 20_000);
  }
}
