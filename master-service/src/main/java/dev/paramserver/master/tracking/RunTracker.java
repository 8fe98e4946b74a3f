package dev.paramserver.master.tracking;

import com.google.protobuf.Value;
import dev.paramserver.adminapi.JobView;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
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
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Run tracking: appends one JSON line per ended pass to a {@code metrics.jsonl} (step, pass,
 * training and test loss, accuracy, AUC, records, samples/s, start, end, time) and one per point of
 * the training loss ({@code "kind":"loss"}: samples, trainLoss, records, batches, time), writes the
 * job's hyperparameters to a {@code params.json} beside it, and, when configured, the same values
 * to a TensorBoard event file: the pass scalars at step = pass number (from 1), {@value
 * #STEP_LOSS_TAG} at step = samples trained by the job, and the hyperparameters as the hparams
 * plugin's session (its end once the job ended). A pass is written once its evaluations arrived, or
 * {@link #EVAL_GRACE} after it ended, or when the job ended. Passes already in the file (written by
 * an earlier leader) are not written again. Fed the console's view by the leader's sampler; not
 * thread-safe.
 */
public final class RunTracker {
  private static final Logger log = LoggerFactory.getLogger(RunTracker.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final Duration EVAL_GRACE = Duration.ofSeconds(30);
  static final String STEP_LOSS_TAG = "loss/train_step";
  static final String PARAMS_FILE = "params.json";

  private final Path metricsFile;
  private final Path paramsFile;
  private final Path tensorBoardDir;
  private final String host;
  private final Set<Integer> written = new HashSet<>();
  private final Hyperparameters hyperparameters = new Hyperparameters();
  private TensorBoardWriter tensorBoard;
  private boolean loaded;
  private boolean sessionStarted;
  private boolean sessionEnded;
  private String paramsWritten;

  /**
   * @param metricsFile the JSON-lines file (null: none); {@code params.json} goes beside it
   * @param tensorBoardDir where to write a TensorBoard event file (null: none)
   * @param host names the event file
   */
  public RunTracker(Path metricsFile, Path tensorBoardDir, String host) {
    this.metricsFile = metricsFile;
    this.paramsFile =
        metricsFile == null ? null : metricsFile.toAbsolutePath().getParent().resolve(PARAMS_FILE);
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
      if (over && sessionStarted && !sessionEnded && tensorBoard != null) {
        sessionEnded = true;
        tensorBoard.hparamsEnd("FINISHED".equals(view.job().state()), nowMs);
      }
    } catch (IOException | UncheckedIOException e) {
      cannotWrite(e);
    }
  }

  /**
   * Writes the training loss's {@code points}: a metrics line each, and {@value #STEP_LOSS_TAG} at
   * step = samples.
   */
  public void onLoss(List<LossSeries.Point> points, long nowMs) {
    if (!enabled() || points.isEmpty()) {
      return;
    }
    try {
      for (LossSeries.Point p : points) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "loss");
        m.put("samples", p.samples());
        m.put("trainLoss", p.loss());
        m.put("records", p.records());
        m.put("batches", p.batches());
        m.put("time", Instant.ofEpochMilli(p.timeMs() > 0 ? p.timeMs() : nowMs).toString());
        appendLine(m);
        if (tensorBoardDir != null) {
          eventFile(nowMs).scalars(p.samples(), nowMs, Map.of(STEP_LOSS_TAG, p.loss()));
        }
      }
    } catch (IOException | UncheckedIOException e) {
      cannotWrite(e);
    }
  }

  /**
   * Writes the job's hyperparameters once the job trains: {@code params.json} (again when they
   * change, for example when more trainers joined) and, once, the hparams plugin's session start.
   *
   * @param fromTrainers the hyperparameters the trainers sent with SetDataset (empty: none yet)
   */
  public void onHyperparameters(Map<String, Value> fromTrainers, JobView view, long nowMs) {
    if (!enabled() || !view.sampled() || fromTrainers.isEmpty()) {
      return;
    }
    Map<String, Value> all = hyperparameters.of(fromTrainers, view);
    boolean training =
        view.job().isOver()
            || (view.passes() != null && view.passes().stream().anyMatch(p -> p.records() > 0));
    if (!training) {
      return;
    }
    try {
      if (paramsFile != null) {
        String json = Hyperparameters.toJson(all);
        if (!json.equals(paramsWritten)) {
          Files.createDirectories(paramsFile.getParent());
          Path tmp = paramsFile.resolveSibling(PARAMS_FILE + ".tmp");
          Files.writeString(tmp, json, StandardCharsets.UTF_8);
          Files.move(
              tmp, paramsFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
          paramsWritten = json;
        }
      }
      if (tensorBoardDir != null && !sessionStarted) {
        Long started = view.job().startedMs();
        eventFile(nowMs).hparamsStart(all, started == null ? nowMs : started);
        sessionStarted = true;
      }
    } catch (IOException | UncheckedIOException e) {
      cannotWrite(e);
    }
  }

  private void cannotWrite(Exception e) {
    log.warn(
        "run tracking: cannot write {} or {}: {}", metricsFile, tensorBoardDir, e.getMessage());
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

  private void appendLine(Map<String, Object> line) throws IOException {
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
  }

  private TensorBoardWriter eventFile(long nowMs) throws IOException {
    if (tensorBoard == null) {
      tensorBoard = new TensorBoardWriter(tensorBoardDir, host, nowMs);
    }
    return tensorBoard;
  }

  private void write(Map<String, Object> line, int pass, long nowMs) throws IOException {
    appendLine(line);
    if (tensorBoardDir != null) {
      TensorBoardWriter tb = eventFile(nowMs);
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
      tb.scalars(pass + 1, nowMs, scalars);
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
        if (n != null && n.has("pass") && !n.has("kind")) {
          written.add(n.get("pass").asInt() - 1);
        }
      } catch (JacksonException e) {
        throw new IOException("a line of " + metricsFile + " is not JSON: " + l, e);
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
