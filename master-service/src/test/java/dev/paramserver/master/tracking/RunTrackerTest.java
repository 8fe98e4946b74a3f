package dev.paramserver.master.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Value;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.proto.tensorboard.Event;
import dev.paramserver.proto.tensorboard.HParamsPluginData;
import dev.paramserver.proto.tensorboard.SessionStatus;
import dev.paramserver.proto.tensorboard.Summary;
import dev.paramserver.testsupport.TfRecords;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

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
    return view(state, passes, List.of(), List.of());
  }

  private static JobView view(
      String state,
      List<JobView.Pass> passes,
      List<JobView.Pserver> pservers,
      List<JobView.Trainer> trainers) {
    JobView.Job job =
        new JobView.Job(
            state,
            "",
            "m",
            "a",
            0,
            2,
            new JobView.Tasks(0, 0, 0, 0),
            1,
            3000,
            10_000L,
            0,
            0,
            null,
            0,
            0);
    return new JobView(1L, true, job, passes, null, pservers, trainers, List.of());
  }

  private static JobView.Trainer trainer(String id) {
    return new JobView.Trainer(
        id, "h:1", "TRAINING", 0, null, 0, null, 0, null, null, null, null, false, "");
  }

  /** Reads an event file back: checks both masked CRC-32Cs of every record and parses it. */
  static List<Event> readEvents(Path file) throws Exception {
    List<Event> out = new ArrayList<>();
    for (byte[] record : TfRecords.read(file)) {
      out.add(Event.parseFrom(record));
    }
    return out;
  }

  private static Path eventFile(Path dir) throws Exception {
    try (var files = Files.list(dir)) {
      return files
          .filter(f -> f.getFileName().toString().startsWith("events.out.tfevents."))
          .findFirst()
          .orElseThrow();
    }
  }

  /** The hparams plugin's data of the value tagged {@code tag}, checked to name the plugin. */
  static List<HParamsPluginData> hparams(List<Event> events, String tag) throws Exception {
    List<HParamsPluginData> out = new ArrayList<>();
    for (Event e : events) {
      for (Summary.Value v : e.getSummary().getValueList()) {
        if (v.getTag().equals(tag)) {
          assertThat(v.getMetadata().getPluginData().getPluginName()).isEqualTo("hparams");
          assertThat(v.getTensor().getDtype()).isEqualTo(1); // DT_FLOAT, shape [0]
          assertThat(v.getTensor().getTensorShape().getDim(0).getSize()).isZero();
          out.add(HParamsPluginData.parseFrom(v.getMetadata().getPluginData().getContent()));
        }
      }
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
    assertThat(first.get("time").asString()).isEqualTo("1970-01-01T00:00:14Z");
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

  @Test
  void lossPointsAreWrittenAsKindLossLinesAndAsTheStepLossScalar_andPassesStillLoadBack()
      throws Exception {
    Path metrics = dir.resolve("metrics.jsonl");
    RunTracker t = new RunTracker(metrics, dir, "host");
    t.onLoss(
        List.of(
            new LossSeries.Point(1024, 0.9, 1024, 16, 11_000),
            new LossSeries.Point(2048, 0.5, 1024, 16, 12_000)),
        13_000);
    t.onView(view("RUNNING", List.of(pass(0, 12_000L, 0.4), pass(1, null, null))), 7, 14_000);
    t.close();

    List<String> lines = Files.readAllLines(metrics);
    assertThat(lines).hasSize(3);
    JsonNode first = new ObjectMapper().readTree(lines.get(0));
    assertThat(first.get("kind").asString()).isEqualTo("loss");
    assertThat(first.get("samples").asLong()).isEqualTo(1024);
    assertThat(first.get("trainLoss").asDouble()).isEqualTo(0.9);
    assertThat(first.get("batches").asLong()).isEqualTo(16);
    assertThat(first.get("time").asString()).isEqualTo("1970-01-01T00:00:11Z");
    assertThat(first.has("pass")).isFalse();

    List<Event> events = readEvents(eventFile(dir));
    List<Event> stepLoss =
        events.stream()
            .filter(
                e ->
                    e.getSummary().getValueCount() == 1
                        && e.getSummary().getValue(0).getTag().equals("loss/train_step"))
            .toList();
    assertThat(stepLoss).extracting(Event::getStep).containsExactly(1024L, 2048L);
    assertThat(stepLoss.get(1).getSummary().getValue(0).getSimpleValue()).isEqualTo(0.5f);

    // a new leader reads the pass lines back among the loss lines: pass 1 is not written again
    RunTracker again = new RunTracker(metrics, null, "host");
    again.onView(view("RUNNING", List.of(pass(0, 12_000L, 0.4))), 8, 15_000);
    assertThat(Files.readAllLines(metrics)).hasSize(3);
  }

  @Test
  void hyperparameters_goToParamsJsonBesideTheMetrics_andToTheHparamsPluginsSession()
      throws Exception {
    Path metrics = dir.resolve("run").resolve("metrics.jsonl");
    Path tb = dir.resolve("tb");
    RunTracker t = new RunTracker(metrics, tb, "host");
    Map<String, Value> fromTrainers =
        Map.of(
            "optimizer", Value.newBuilder().setStringValue("adam").build(),
            "learning-rate", Value.newBuilder().setNumberValue(0.01).build(),
            "batch-size", Value.newBuilder().setNumberValue(64).build());
    JobView.Pass trained = new JobView.Pass(0, 10_000L, null, 500L, 0, 0, null, null, null, null);
    // nothing before the job trains, nor before the trainers sent their hyperparameters
    JobView.Pass untrained = new JobView.Pass(0, 10_000L, null, 0L, 0, 0, null, null, null, null);
    t.onHyperparameters(fromTrainers, view("RUNNING", List.of(untrained)), 11_000);
    t.onHyperparameters(Map.of(), view("RUNNING", List.of(trained)), 11_000);
    assertThat(dir.resolve("run").resolve("params.json")).doesNotExist();

    t.onHyperparameters(
        fromTrainers, view("RUNNING", List.of(trained), List.of(), List.of(trainer("t0"))), 12_000);
    // a second trainer joins: params.json follows, the TensorBoard session start stays as it was
    t.onHyperparameters(
        fromTrainers,
        view("RUNNING", List.of(trained), List.of(), List.of(trainer("t0"), trainer("t1"))),
        13_000);
    t.onView(view("FINISHED", List.of(pass(0, 20_000L, 0.3))), 9, 21_000);
    t.onView(view("FINISHED", List.of(pass(0, 20_000L, 0.3))), 9, 22_000);
    t.close();

    JsonNode params =
        new ObjectMapper().readTree(dir.resolve("run").resolve("params.json").toFile());
    assertThat(params.get("optimizer").asString()).isEqualTo("adam");
    assertThat(params.get("learning-rate").asDouble()).isEqualTo(0.01);
    assertThat(params.get("batch-size").isIntegralNumber()).isTrue();
    assertThat(params.get("batch-size").asInt()).isEqualTo(64);
    assertThat(params.get("passes").asInt()).isEqualTo(2);
    assertThat(params.get("trainers").asInt()).isEqualTo(2);
    assertThat(params.get("dataset-records").asLong()).isEqualTo(3000);
    assertThat(dir.resolve("run").resolve("params.json.tmp")).doesNotExist();

    List<Event> events = readEvents(eventFile(tb));
    List<HParamsPluginData> start = hparams(events, "_hparams_/session_start_info");
    assertThat(start).hasSize(1);
    assertThat(start.get(0).getVersion()).isZero();
    Map<String, Value> h = start.get(0).getSessionStartInfo().getHparamsMap();
    assertThat(h.get("optimizer").getStringValue()).isEqualTo("adam");
    assertThat(h.get("learning-rate").getNumberValue()).isEqualTo(0.01);
    assertThat(h.get("trainers").getNumberValue()).isEqualTo(1.0);
    assertThat(start.get(0).getSessionStartInfo().getStartTimeSecs()).isEqualTo(10.0);
    List<HParamsPluginData> end = hparams(events, "_hparams_/session_end_info");
    assertThat(end).hasSize(1);
    assertThat(end.get(0).getSessionEndInfo().getStatus()).isEqualTo(SessionStatus.STATUS_SUCCESS);
    assertThat(end.get(0).getSessionEndInfo().getEndTimeSecs()).isEqualTo(21.0);
  }
}
