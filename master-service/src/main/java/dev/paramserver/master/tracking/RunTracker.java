package dev.paramserver.master.tracking;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.paramserver.adminapi.JobView;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Run tracking: appends one JSON line per ended pass to a {@code metrics.jsonl} (step, pass,
 * training and test loss, accuracy, AUC, records, samples/s, start, end, time) and, when
 * configured, the same values as scalars to a TensorBoard event file (step = pass number, from 1).
 * A pass is written once its evaluations arrived, or {@link #EVAL_GRACE} after it ended, or when
 * the job ended. Passes already in the file (written by an earlier leader) are not written again.
 * Fed the console's view by the leader's sampler; not thread-safe.
 */
public final class RunTracker {
  private static final Logger log = LoggerFactory.getLogger(RunTracker.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final Duration EVAL_GRACE = Duration.ofSeconds(30);

  private final Path metricsFile;
  private final Path tensorBoardDir;
  private final String host;
  private final Set<Integer> written = new HashSet<>();
  private TensorBoardWriter tensorBoard;
  private boolean loaded;

  /**
   * @param metricsFile the JSON-lines file (null: none)
   * @param tensorBoardDir where to write a TensorBoard event file (null: none)
   * @param host names the event file
   */
  public RunTracker(Path metricsFile, Path tensorBoardDir, String host) {
    this.metricsFile = metricsFile;
    this.tensorBoardDir = tensorBoardDir;
    this.host = host;
  }

  public boolean enabled() {
    return metricsFile != null || tensorBoardDir != null;
  }

  /**
   * Writes the passes of {@code view} (the console's {@code /admin/job} view) that are ready.
   *
   * @param step the model's update count now (the sum of the pservers' steps)
   */
  public void onView(JobView view, long step, long nowMs) {
    if (!enabled() || !view.sampled()) {
      return;
    }
    try {
      loadWritten();
      boolean over = view.job().isOver();
      for (JobView.Pass p : view.passes() == null ? List.<JobView.Pass>of() : view.passes()) {
        if (written.contains(p.pass()) || p.endedMs() == null) {
          continue;
        }
        boolean evaluated = p.testLoss() != null;
        if (evaluated || over || nowMs - p.endedMs() >= EVAL_GRACE.toMillis()) {
          write(line(p, step, nowMs), p.pass(), nowMs);
          written.add(p.pass());
        }
      }
    } catch (IOException | UncheckedIOException e) {
      log.warn("run tracking: cannot write {}: {}", metricsFile, e.getMessage());
    }
  }

  /** The metrics line of an ended pass {@code p}. */
  static Map<String, Object> line(JobView.Pass p, long step, long nowMs) {
    long ended = p.endedMs();
    double seconds = Math.max(0.001, (ended - p.startedMs()) / 1000.0);
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("step", step);
    m.put("pass", p.pass() + 1);
    m.put("trainLoss", p.trainLoss());
    m.put("testLoss", p.testLoss());
    m.put("accuracy", p.accuracy());
    m.put("auc", p.auc());
    m.put("records", p.records());
    m.put("samplesPerSecond", Math.round(p.records() / seconds * 10) / 10.0);
    m.put("startedMs", p.startedMs());
    m.put("endedMs", ended);
    m.put("time", Instant.ofEpochMilli(nowMs).toString());
    return m;
  }

  private void write(Map<String, Object> line, int pass, long nowMs) throws IOException {
    if (metricsFile != null) {
      if (metricsFile.getParent() != null) {
        Files.createDirectories(metricsFile.getParent());
      }
      Files.writeString(
          metricsFile,
          JSON.writeValueAsString(line) + "\n",
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    }
    if (tensorBoardDir != null) {
      if (tensorBoard == null) {
        tensorBoard = new TensorBoardWriter(tensorBoardDir, host, nowMs);
      }
      Map<String, Double> scalars = new LinkedHashMap<>();
      for (String[] tag :
          new String[][] {
            {"trainLoss", "loss/train"},
            {"testLoss", "loss/test"},
            {"accuracy", "accuracy"},
            {"auc", "auc"},
            {"samplesPerSecond", "samples_per_second"}
          }) {
        if (line.get(tag[0]) instanceof Number n) {
          scalars.put(tag[1], n.doubleValue());
        }
      }
      tensorBoard.scalars(pass + 1, nowMs, scalars);
    }
  }

  private void loadWritten() throws IOException {
    if (loaded) {
      return;
    }
    loaded = true;
    if (metricsFile == null || !Files.exists(metricsFile)) {
      return;
    }
    for (String l : Files.readAllLines(metricsFile, StandardCharsets.UTF_8)) {
      try {
        JsonNode n = JSON.readTree(l);
        if (n != null && n.has("pass")) {
          written.add(n.get("pass").asInt() - 1);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("a line of " + metricsFile + " is not JSON: " + l, e);
      }
    }
  }

  /** Closes the event file. */
  public void close() {
    if (tensorBoard != null) {
      try {
        tensorBoard.close();
      } catch (IOException e) {
        log.debug("closing the event file", e);
      }
      tensorBoard = null;
    }
  }
}
