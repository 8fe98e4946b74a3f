package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Value;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.tensorboard.Event;
import dev.paramserver.proto.tensorboard.HParamsPluginData;
import dev.paramserver.proto.tensorboard.SessionStatus;
import dev.paramserver.proto.tensorboard.Summary;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TfRecords;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Run tracking during a real job (etcd, a master, a pserver and two trainers as processes), into a
 * tracking directory set as any deployment sets it: the trainers' per-task loss windows arrive as
 * points of training loss about every {@code loss-every-records} records of the job, in {@code
 * metrics.jsonl} and in the TensorBoard event file; {@code params.json} holds the job's
 * hyperparameters, and the event file the hparams plugin's session, which parses back.
 */
class RunTrackingEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long EVERY = 1000;

  @TempDir Path dir;

  @Test
  void lossEveryThousandRecords_andTheHyperparameters_reachMetricsParamsAndTensorBoard()
      throws Exception {
    Path data = dir.resolve("data");
    DemoData.Result demo =
        DemoData.generate(
            data,
            DemoData.Options.builder()
                .train(8000)
                .test(1000)
                .shards(2)
                .recordsPerChunk(250)
                .build());
    int passes = 2;
    Path tracking = dir.resolve("tracking");
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("tracking")
                .masters(1)
                .pservers(1)
                .trainers(2)
                .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
                .property(Role.MASTER, "paramserver.master.tracking.dir", tracking.toString())
                .property(
                    Role.MASTER,
                    "paramserver.master.tracking.loss-every-records",
                    Long.toString(EVERY))
                .property(Role.MASTER, "paramserver.master.console.sample-interval", "200ms")
                .property(
                    Role.TRAINER, "paramserver.trainer.train-data", data + "/train-*.recordio")
                .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
                .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
                .property(Role.TRAINER, "paramserver.trainer.batch-size", "50")
                .build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(s -> s.isFailed() || s.isFinished(), Duration.ofMinutes(4));
      assertThat(end.state()).as("job; failure: %s", end.failureReason()).isEqualTo("FINISHED");
      long trained = passes * Jobs.number(end.json(), "datasetRecords");

      // the session's end is written at the first sample after the job ended, with the last pass
      Poll.until(
          Duration.ofSeconds(30),
          () -> hasSessionEnd(tracking),
          "the hparams session end in the event file");
      Path events = eventFile(tracking);
      List<JsonNode> loss = lines(tracking.resolve("metrics.jsonl"), true);
      assertThat(lines(tracking.resolve("metrics.jsonl"), false)).as("pass lines").hasSize(passes);

      // one point per interval of the job's records, in order, up to (about) all it trained
      assertThat(loss.size())
          .as("loss points")
          .isBetween((int) (trained / EVERY) / 2, (int) (trained / EVERY));
      List<Long> samples = loss.stream().map(n -> n.get("samples").asLong()).toList();
      for (int i = 1; i < samples.size(); i++) {
        assertThat(samples.get(i) / EVERY)
            .as("point %d at %d samples is in the interval after the one before", i, samples.get(i))
            .isGreaterThan(samples.get(i - 1) / EVERY);
      }
      assertThat(samples.get(samples.size() - 1)).isBetween(trained - 2 * EVERY, trained);
      assertThat(loss).allSatisfy(n -> assertThat(n.get("trainLoss").asDouble()).isPositive());
      assertThat(loss.get(loss.size() - 1).get("trainLoss").asDouble())
          .as("the training loss goes down")
          .isLessThan(loss.get(0).get("trainLoss").asDouble());

      // the same points in the event file, as loss/train_step at step = samples
      List<Event> read = new ArrayList<>();
      for (byte[] r : TfRecords.read(events)) {
        read.add(Event.parseFrom(r));
      }
      List<Long> steps = new ArrayList<>();
      HParamsPluginData start = null;
      for (Event e : read) {
        for (Summary.Value v : e.getSummary().getValueList()) {
          if (v.getTag().equals("loss/train_step")) {
            steps.add(e.getStep());
          } else if (v.getTag().equals("_hparams_/session_start_info")) {
            assertThat(v.getMetadata().getPluginData().getPluginName()).isEqualTo("hparams");
            start = HParamsPluginData.parseFrom(v.getMetadata().getPluginData().getContent());
          }
        }
      }
      assertThat(steps).isEqualTo(samples);
      assertThat(start).as("the hparams session start").isNotNull();
      Map<String, Value> h = start.getSessionStartInfo().getHparamsMap();
      assertThat(h.get("optimizer").getStringValue()).isEqualTo("sgd");
      assertThat(h.get("learning-rate").getNumberValue()).isEqualTo(0.1);
      assertThat(h.get("batch-size").getNumberValue()).isEqualTo(50.0);
      assertThat(h.get("passes").getNumberValue()).isEqualTo(passes);
      assertThat(h.get("pservers").getNumberValue()).isEqualTo(1.0);
      assertThat(sessionEnd(tracking).getSessionEndInfo().getStatus())
          .isEqualTo(SessionStatus.STATUS_SUCCESS);

      // params.json beside metrics.jsonl
      JsonNode params = JSON.readTree(tracking.resolve("params.json").toFile());
      assertThat(params.get("model").asString()).isEqualTo("softmax");
      assertThat(params.get("optimizer").asString()).isEqualTo("sgd");
      assertThat(params.get("learning-rate").asDouble()).isEqualTo(0.1);
      assertThat(params.get("batch-size").asInt()).isEqualTo(50);
      assertThat(params.get("mode").asString()).isEqualTo("async");
      assertThat(params.get("passes").asInt()).isEqualTo(passes);
      assertThat(params.get("pservers").asInt()).isEqualTo(1);
      assertThat(params.get("trainers").asInt()).isBetween(1, 2);
      assertThat(params.get("dataset-records").asLong()).isEqualTo(trained / passes);
    }
  }

  /** The metrics lines: the loss points ({@code kind} loss) or the pass lines. */
  private static List<JsonNode> lines(Path file, boolean lossPoints) throws IOException {
    List<JsonNode> out = new ArrayList<>();
    for (String l : Files.readAllLines(file)) {
      JsonNode n = JSON.readTree(l);
      if (lossPoints == "loss".equals(n.path("kind").asString())) {
        out.add(n);
      }
    }
    return out;
  }

  private static Path eventFile(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .filter(f -> f.getFileName().toString().startsWith("events.out.tfevents."))
          .findFirst()
          .orElse(null);
    }
  }

  private static boolean hasSessionEnd(Path dir) {
    try {
      return sessionEnd(dir) != null;
    } catch (IOException | IllegalStateException e) {
      return false; // not there yet, or a record being written
    }
  }

  /** The hparams session end in the event file, or null while there is none. */
  private static HParamsPluginData sessionEnd(Path dir) throws IOException {
    Path file = eventFile(dir);
    if (file == null) {
      return null;
    }
    for (byte[] r : TfRecords.read(file)) {
      for (Summary.Value v : Event.parseFrom(r).getSummary().getValueList()) {
        if (v.getTag().equals("_hparams_/session_end_info")) {
          return HParamsPluginData.parseFrom(v.getMetadata().getPluginData().getContent());
        }
      }
    }
    return null;
  }
}
