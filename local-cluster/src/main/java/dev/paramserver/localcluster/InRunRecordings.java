package dev.paramserver.localcluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Start-up caches recorded by a job's own processes, on a JDK with JEP 514's one-step AOT cache
 * ({@value #ONE_STEP_FEATURE} or newer): no separate training job. Before the cluster starts, the
 * jar of each role whose cache is missing is extracted into its cache entry ({@link
 * ClassDataArchives#begin}, which also takes the entry's lock); the role's first process then runs
 * the extracted jar with {@code -XX:AOTCacheOutput=<entry>/app.aot.part}, its other processes the
 * extracted jar alone. The JVM writes the cache as it exits (a SIGTERM'd one too, a SIGKILL'd one
 * not), so the job's end pays for it. Once the cluster is stopped, {@link #finish} checks each
 * written cache by starting a JVM that must map it ({@code -XX:AOTMode=on}): only a complete, valid
 * cache is moved to {@code app.aot} and its entry marked ready; a killed run leaves no cache in
 * use. The next run starts from the caches.
 *
 * <p>Only for {@code run-local}, which begins the recordings before it starts the cluster and
 * finishes them after it stopped it (its spec has {@link ClusterSpec#archiveTrainingJob()}); a JDK
 * 24 or Java 17 keeps {@link ArchiveTrainingJob}'s recording.
 */
final class InRunRecordings {
  private static final Logger log = LoggerFactory.getLogger(InRunRecordings.class);

  /** The first JDK with {@code -XX:AOTCacheOutput} (JEP 514). */
  static final int ONE_STEP_FEATURE = 25;

  /**
   * How long a recording process may take to exit: it writes its cache then (tens of seconds on a
   * loaded 2-core machine); run-local's stop timeout while it records.
   */
  static final Duration STOP_TIMEOUT = Duration.ofMinutes(3);

  private static final Duration CHECK_TIMEOUT = Duration.ofMinutes(1);
  private static final String PART = "app.aot.part";

  /** The recordings under way, by run folder (a spec's launches look theirs up here). */
  private static final Map<Path, Map<Role, ClassDataArchives.Recording>> ACTIVE =
      new ConcurrentHashMap<>();

  private InRunRecordings() {}

  /** The jar and JVM options of a process that takes part in a recording. */
  record Start(Path jar, List<String> jvmOptions) {}

  /** Whether {@code spec}'s processes record their own caches (some missing, JDK 25+). */
  static boolean applies(ClusterSpec spec) {
    return spec.classDataSharing()
        && spec.archiveTrainingJob()
        && spec.command() == ServiceCommand.javaServices()
        && ClassDataArchives.feature(spec.javaBinary()) >= ONE_STEP_FEATURE
        && !missing(spec).isEmpty();
  }

  /** The roles of {@link ArchiveTrainingJob#ROLES} the cluster launches whose cache is missing. */
  static List<Role> missing(ClusterSpec spec) {
    return ArchiveTrainingJob.ROLES.stream()
        .filter(
            role ->
                spec.count(role) > 0
                    && spec.jar(role) != null
                    && Files.isRegularFile(spec.jar(role))
                    && ClassDataArchives.launchOf(spec.jar(role), spec.javaBinary())
                        .archive()
                        .isEmpty())
        .toList();
  }

  /**
   * Extracts the jars of the missing caches, side by side, and registers the recordings for the
   * launches of {@code spec}; a role whose extraction fails or whose entry another process is
   * making starts from its jar.
   */
  static void begin(ClusterSpec spec) {
    begin(spec, role -> ClassDataArchives.begin(spec.jar(role), spec.javaBinary()));
  }

  /** {@link #begin(ClusterSpec)} with {@code beginner} taking each role's lock and extracting. */
  static void begin(
      ClusterSpec spec, Function<Role, Optional<ClassDataArchives.Recording>> beginner) {
    Map<Role, ClassDataArchives.Recording> begun = new ConcurrentHashMap<>();
    if (!ArchiveTrainingJob.inParallel(
        missing(spec), role -> beginner.apply(role).ifPresent(r -> begun.put(role, r)))) {
      begun.values().forEach(ClassDataArchives::abandon);
      return;
    }
    if (!begun.isEmpty()) {
      log.info("{} record their start-up caches in this run (once per build)", begun.keySet());
      ACTIVE.put(spec.runDir(), new EnumMap<>(begun));
    }
  }

  /**
   * How process {@code index} of {@code role} starts while its role records: the first with the
   * cache's output option, every one from the extracted jar. Empty when the role records nothing.
   */
  static Optional<Start> start(ClusterSpec spec, Role role, int index) {
    Map<Role, ClassDataArchives.Recording> recordings = ACTIVE.get(spec.runDir());
    ClassDataArchives.Recording r = recordings == null ? null : recordings.get(role);
    if (r == null) {
      return Optional.empty();
    }
    List<String> options =
        index == 0 ? List.of("-XX:AOTCacheOutput=" + r.entry.resolve(PART)) : List.of();
    return Optional.of(new Start(r.extractedJar(), options));
  }

  /** Whether {@code spec}'s processes are recording caches (so their exits take longer). */
  static boolean recording(ClusterSpec spec) {
    return ACTIVE.containsKey(spec.runDir());
  }

  /**
   * Stops the recording masters and pservers side by side (SIGTERM; each writes its cache as it
   * exits, which {@link LocalCluster#close} would wait for one role after the other); a recording
   * trainer ends on its own at the job's end.
   */
  static void stopRecorders(LocalCluster cluster) {
    Map<Role, ClassDataArchives.Recording> recordings = ACTIVE.get(cluster.spec().runDir());
    if (recordings == null) {
      return;
    }
    ArchiveTrainingJob.inParallel(
        List.of(Role.MASTER, Role.PSERVER).stream().filter(recordings::containsKey).toList(),
        role -> cluster.stop(role, 0));
  }

  /**
   * After the cluster has stopped: adopts each cache its process wrote, when a JVM with the role's
   * options maps it, else drops the entry (the next run records again). Returns the roles whose
   * cache is now ready.
   */
  static List<Role> finish(ClusterSpec spec) {
    Map<Role, ClassDataArchives.Recording> recordings = ACTIVE.remove(spec.runDir());
    if (recordings == null) {
      return List.of();
    }
    List<Role> ready = new ArrayList<>();
    recordings.forEach(
        (role, r) -> {
          try {
            Path part = r.entry.resolve(PART);
            if (!Files.isRegularFile(part) || !maps(spec, role, r, part)) {
              throw new IOException("no complete cache was written (see " + r.entry + ")");
            }
            Files.move(part, r.archive(), StandardCopyOption.ATOMIC_MOVE);
            ClassDataArchives.markReady(r);
            ready.add(role);
          } catch (IOException | RuntimeException e) {
            log.warn(
                "no start-up cache of {} from this run ({}): the next run records it",
                r.jar.getFileName(),
                e.toString());
            ClassDataArchives.abandon(r);
          } catch (InterruptedException e) {
            ClassDataArchives.abandon(r);
            Thread.currentThread().interrupt();
          }
        });
    return ready;
  }

  /** Whether a JVM started as the role's processes are maps {@code cache} (and then just exits). */
  private static boolean maps(
      ClusterSpec spec, Role role, ClassDataArchives.Recording r, Path cache)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(spec.javaBinary());
    cmd.addAll(spec.jvmOptions(role));
    cmd.add("-XX:AOTMode=on");
    cmd.add("-XX:AOTCache=" + cache);
    cmd.add("-cp");
    cmd.add(r.extractedJar().toString());
    cmd.add("-version");
    Path logFile = r.entry.resolve("check.log");
    ClassDataArchives.run(cmd, logFile, CHECK_TIMEOUT);
    // -XX:AOTMode=on makes a JVM that cannot map the cache fail at once, before -version prints
    return Files.readString(logFile).contains("version \"");
  }
}
