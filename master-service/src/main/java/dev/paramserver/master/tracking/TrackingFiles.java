package dev.paramserver.master.tracking;

import dev.paramserver.master.config.MasterProperties;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where run tracking writes, from {@code paramserver.master.tracking}: the metrics file ({@code
 * params.json} beside it) and the TensorBoard directory, by default both in the job's tracking
 * directory. Checked when the master starts: each directory is created and a file written and
 * deleted in it. A directory the operator set that cannot be written stops the master (naming the
 * property); the default one switches tracking off with a warning.
 *
 * @param metricsFile the JSON-lines file, or null for none
 * @param tensorboardDir the event file's directory, or null for none
 */
public record TrackingFiles(Path metricsFile, Path tensorboardDir) {
  private static final Logger log = LoggerFactory.getLogger(TrackingFiles.class);
  static final String METRICS_FILE = "metrics.jsonl";

  /** No tracking. */
  public static TrackingFiles none() {
    return new TrackingFiles(null, null);
  }

  public boolean enabled() {
    return metricsFile != null || tensorboardDir != null;
  }

  /** The job's default tracking directory: {@code <java.io.tmpdir>/paramserver-tracking/<job>}. */
  static Path defaultDir(String job) {
    return Path.of(System.getProperty("java.io.tmpdir"), "paramserver-tracking", job);
  }

  /**
   * The files of {@code settings} for {@code job}, checked to be writable.
   *
   * @throws IllegalStateException when a directory that was set cannot be written
   */
  public static TrackingFiles resolve(MasterProperties.Tracking settings, String job) {
    if (!settings.enabled()) {
      log.info("run tracking is off (paramserver.master.tracking.enabled=false)");
      return none();
    }
    boolean dirSet = settings.dir() != null;
    Path dir = dirSet ? settings.dir() : defaultDir(job);
    Path metrics =
        settings.metricsFile() != null ? settings.metricsFile() : dir.resolve(METRICS_FILE);
    Path tensorboard = settings.tensorboardDir() != null ? settings.tensorboardDir() : dir;
    Path metricsDir = metrics.toAbsolutePath().getParent();
    String problem = unwritable(metricsDir);
    String property =
        settings.metricsFile() != null
            ? "paramserver.master.tracking.metrics-file"
            : "paramserver.master.tracking.dir";
    if (problem == null && !tensorboard.toAbsolutePath().equals(metricsDir)) {
      problem = unwritable(tensorboard);
      property =
          settings.tensorboardDir() != null
              ? "paramserver.master.tracking.tensorboard-dir"
              : "paramserver.master.tracking.dir";
    }
    if (problem != null) {
      boolean set = dirSet || settings.metricsFile() != null || settings.tensorboardDir() != null;
      String message =
          "run tracking cannot write "
              + problem
              + ": set "
              + property
              + " to a writable directory (a volume, for the files to outlive the master), or"
              + " paramserver.master.tracking.enabled=false";
      if (set) {
        throw new IllegalStateException(message);
      }
      log.warn("{}; run tracking is off", message);
      return none();
    }
    log.info(
        "run tracking writes {} (params.json beside it) and TensorBoard events to {}",
        metrics.toAbsolutePath(),
        tensorboard.toAbsolutePath());
    return new TrackingFiles(metrics, tensorboard);
  }

  /** Why {@code dir} cannot be written, or null when it can. */
  private static String unwritable(Path dir) {
    try {
      Files.createDirectories(dir);
      Path probe = Files.createTempFile(dir, ".write-check", ".tmp");
      Files.delete(probe);
      return null;
    } catch (IOException | SecurityException e) {
      return dir.toAbsolutePath() + " (" + e + ")";
    }
  }
}
