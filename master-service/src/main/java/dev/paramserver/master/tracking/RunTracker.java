package dev.paramserver.master.tracking;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
  @SuppressWarnings("unchecked")
  public void onView(Map<String, Object> view, long step, long nowMs) {
    if (!enabled()) {
      return;
    }
    try {
      loadWritten();
      Map<String, Object> job = (Map<String, Object>) view.get("job");
      String state = job == null ? "" : String.valueOf(job.get("state"));
      boolean over = "FINISHED".equals(state) || "FAILED".equals(state);
      for (Map<String, Object> p :
          (List<Map<String, Object>>) view.getOrDefault("passes", List.of())) {
        int pass = ((Number) p.get("pass")).intValue();
        Object ended = p.get("endedMs");
        if (written.contains(pass) || !(ended instanceof Number e)) {
          continue;
        }
        boolean evaluated = p.get("testLoss") != null;
        if (evaluated || over || nowMs - e.longValue() >= EVAL_GRACE.toMillis()) {
          write(line(p, step, nowMs), pass, nowMs);
          written.add(pass);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      log.warn("run tracking: cannot write {}: {}", metricsFile, e.getMessage());
    }
  }

  static Map<String, Object> line(Map<String, Object> p, long step, long nowMs) {
    long started = ((Number) p.get("startedMs")).longValue();
    long ended = ((Number) p.get("endedMs")).longValue();
    long records = ((Number) p.get("records")).longValue();
    double seconds = Math.max(0.001, (ended - started) / 1000.0);
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("step", step);
    m.put("pass", ((Number) p.get("pass")).intValue() + 1);
    m.put("trainLoss", p.get("trainLoss"));
    m.put("testLoss", p.get("testLoss"));
    m.put("accuracy", p.get("accuracy"));
    m.put("auc", p.get("auc"));
    m.put("records", records);
    m.put("samplesPerSecond", Math.round(records / seconds * 10) / 10.0);
    m.put("startedMs", started);
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
