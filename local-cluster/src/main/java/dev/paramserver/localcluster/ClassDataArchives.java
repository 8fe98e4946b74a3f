package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Faster service start-up through class-data sharing: a service's executable jar is extracted once
 * ({@code java -Djarmode=tools -jar app.jar extract}) and started once with {@code
 * -XX:ArchiveClassesAtExit} and {@code spring.context.exit=onRefresh}, which loads the classes of a
 * whole application context and writes them to a dynamic CDS archive. Later launches run the
 * extracted jar with {@code -XX:SharedArchiveFile}: a pserver went from launch to started in 3.8 s
 * instead of 7.4 s from the fat jar on a loaded 2-core machine.
 *
 * <p>The archives live in a cache keyed by the jar's content ({@code PARAMSERVER_CDS_DIR}, or
 * {@code paramserver-cds-<user>} in the temporary directory), so every cluster started from the
 * same build shares them; the cache keeps the newest {@value #KEEP} entries per jar name. One
 * process at a time makes an entry (a lock directory beside it), in place because an archive
 * records the class path it was made with, and marks it ready last: others start from the fat jar
 * meanwhile and never see half an entry. Whatever fails (an old JDK, a full disk, a training run
 * that does not end) only costs the speed-up: the service then starts from its fat jar as before.
 *
 * <p>With a JDK of version {@value #AOT_CACHE_FEATURE} or newer (the services' {@code java}, which
 * may differ from the one running this), the archive is an AOT cache instead (JEP 483: classes
 * loaded and linked ahead of time, on 25 also method profiles), used with {@code -XX:AOTCache}:
 * recorded with {@code -XX:AOTMode=record} and made with {@code -XX:AOTMode=create}, or on 25 by a
 * job's own processes ({@link InRunRecordings}). Its entry's key names the JDK ({@code -jdk<N>}),
 * since an AOT cache serves only the JDK that made it and a JDK older than 24 refuses the option.
 */
public final class ClassDataArchives {
  private static final Logger log = LoggerFactory.getLogger(ClassDataArchives.class);
  private static final int KEEP = 3;
  private static final Duration TRAINING_TIMEOUT = Duration.ofMinutes(3);
  private static final Map<String, String> KEYS = new ConcurrentHashMap<>();
  private static final Map<String, Integer> FEATURES = new ConcurrentHashMap<>();

  /** The first JDK with {@code -XX:AOTCache} (JEP 483). */
  static final int AOT_CACHE_FEATURE = 24;

  private ClassDataArchives() {}

  /**
   * How to launch a service: the jar to run and, when there is one, its class-data archive (a CDS
   * archive {@code app.jsa} or an AOT cache {@code app.aot}).
   */
  public record Launch(Path jar, Optional<Path> archive) {
    /** The JVM option that uses the archive, if any. */
    public List<String> jvmOptions() {
      return archive
          .map(
              a ->
                  a.getFileName().toString().endsWith(".aot")
                      ? "-XX:AOTCache=" + a
                      : "-XX:SharedArchiveFile=" + a)
          .map(List::of)
          .orElse(List.of());
    }
  }

  /** Whether class-data sharing is on: unless {@code PARAMSERVER_CDS} is {@code off}. */
  public static boolean enabled() {
    String v = System.getenv("PARAMSERVER_CDS");
    return v == null || !v.equalsIgnoreCase("off");
  }

  /** The cache directory: system property {@code paramserver.cds.dir}, else the environment's. */
  static Path cacheDir() {
    String dir = System.getProperty("paramserver.cds.dir", System.getenv("PARAMSERVER_CDS_DIR"));
    if (dir != null && !dir.isBlank()) {
      return Path.of(dir);
    }
    return Path.of(
        System.getProperty("java.io.tmpdir"),
        "paramserver-cds-" + System.getProperty("user.name", "user"));
  }

  /**
   * How to launch {@code jar}: its extracted copy with the archive when {@link #prepare} made one,
   * else the jar itself.
   */
  public static Launch launchOf(Path jar) {
    return launchOf(jar, null);
  }

  /**
   * How {@code javaBinary} (null: a JDK older than {@value #AOT_CACHE_FEATURE}) launches {@code
   * jar}: as {@link #launchOf(Path)}, from an AOT cache when that JDK has them.
   */
  public static Launch launchOf(Path jar, String javaBinary) {
    try {
      boolean aot = aotCache(javaBinary);
      Path entry = cacheDir().resolve(key(jar, javaBinary));
      if (Files.isRegularFile(entry.resolve(READY))) {
        return new Launch(
            entry.resolve("app").resolve(jar.getFileName()),
            Optional.of(entry.resolve(aot ? AOT_FILE : CDS_FILE)));
      }
    } catch (UncheckedIOException e) {
      log.debug("no class-data archive for {}: {}", jar, e.toString());
    }
    return new Launch(jar, Optional.empty());
  }

  /**
   * Makes the archive of {@code jar} unless the cache has it: extracts the jar, then runs {@code
   * trainingCommand} (a launch of the extracted jar, to which this adds the archive options) until
   * its context is refreshed. Failures are logged and leave the jar to be launched as it is.
   *
   * @param trainingCommand builds the command from the extracted jar's path
   */
  static void prepare(Path jar, String javaBinary, TrainingCommand trainingCommand) {
    prepare(
        jar, javaBinary, (j, app, log) -> extractBootJar(javaBinary, j, app, log), trainingCommand);
  }

  /**
   * As {@link #prepare(Path, String, TrainingCommand)}, with {@code extractor} laying the jar out
   * as plain jars on the class path (an archive holds no class a nested jar's loader loaded): how
   * psctl, which has no Spring Boot tools in it, archives itself.
   */
  public static void prepare(
      Path jar, String javaBinary, Extractor extractor, TrainingCommand trainingCommand) {
    Optional<Recording> begun = begin(jar, javaBinary, extractor);
    if (begun.isEmpty()) {
      return;
    }
    Recording r = begun.get();
    try {
      List<String> cmd = new ArrayList<>();
      cmd.add(javaBinary);
      cmd.addAll(r.recordOptions());
      cmd.add("-Dspring.context.exit=onRefresh");
      cmd.addAll(trainingCommand.build(r.extractedJar()));
      run(cmd, r.entry.resolve("training.log"), TRAINING_TIMEOUT);
      finish(r, trainingCommand);
    } catch (IOException | RuntimeException e) {
      failed(r, e);
    } catch (InterruptedException e) {
      abandon(r);
      Thread.currentThread().interrupt();
    }
  }

  /**
   * An archive being made: its jar is extracted and a run of the extracted jar with {@link
   * #recordOptions()} records what it loads, until {@link #finish} writes the archive (or {@link
   * #abandon} drops the entry). Holds the entry's lock meanwhile.
   */
  public static final class Recording {
    final Path jar;
    final String javaBinary;
    final Path entry;
    final Path lock;
    final boolean aot;
    final long started = System.nanoTime();

    private Recording(Path jar, String javaBinary, Path entry, Path lock, boolean aot) {
      this.jar = jar;
      this.javaBinary = javaBinary;
      this.entry = entry;
      this.lock = lock;
      this.aot = aot;
    }

    /** The extracted jar to launch instead of {@code jar} (the archive records its class path). */
    public Path extractedJar() {
      return entry.resolve("app").resolve(jar.getFileName());
    }

    /** The JVM options that make the run record the archive (written when the JVM exits). */
    public List<String> recordOptions() {
      return aot
          ? List.of("-XX:AOTMode=record", "-XX:AOTConfiguration=" + entry.resolve("app.aotconf"))
          : List.of("-XX:ArchiveClassesAtExit=" + archive());
    }

    Path archive() {
      return entry.resolve(aot ? AOT_FILE : CDS_FILE);
    }
  }

  /**
   * Starts making the archive of {@code jar} for {@code javaBinary}: takes the entry's lock and
   * extracts the jar. Empty when the archive exists, another process is making it, or extracting
   * failed (logged: the jar then starts as it is).
   */
  public static Optional<Recording> begin(Path jar, String javaBinary, Extractor extractor) {
    Recording r = null;
    try {
      Path cache = Files.createDirectories(cacheDir());
      String key = key(jar, javaBinary);
      Path entry = cache.resolve(key);
      if (Files.isRegularFile(entry.resolve(READY))) {
        return Optional.empty();
      }
      Path lock = cache.resolve(key + ".lock");
      if (!takeLock(lock)) {
        log.info(
            "another process is making the class-data archive of {}: starting from the jar",
            jar.getFileName());
        return Optional.empty();
      }
      r = new Recording(jar, javaBinary, entry, lock, aotCache(javaBinary));
      // An archive records the class path it was made with, so it is made where it will be used;
      // "ready" is written last, and only an entry with it is used.
      deleteRecursively(entry);
      log.info(
          "making a class-data archive of {} for faster starts (once per build of it)",
          jar.getFileName());
      extractor.extract(jar, entry.resolve("app"), entry.resolve("extract.log"));
      if (!Files.isRegularFile(r.extractedJar())) {
        throw new IOException("extracting " + jar + " made no " + r.extractedJar());
      }
      return Optional.of(r);
    } catch (IOException | RuntimeException e) {
      if (r != null) {
        failed(r, e);
      } else {
        log.warn("cannot make a class-data archive of {}: {}", jar.getFileName(), e.toString());
      }
    } catch (InterruptedException e) {
      if (r != null) {
        abandon(r);
      }
      Thread.currentThread().interrupt();
    }
    return Optional.empty();
  }

  /** {@link #begin} with a Spring Boot jar's own extraction. */
  static Optional<Recording> begin(Path jar, String javaBinary) {
    return begin(jar, javaBinary, (j, app, l) -> extractBootJar(javaBinary, j, app, l));
  }

  /**
   * Ends a recording whose run has exited: on an AOT JDK makes the cache from the recorded
   * configuration ({@code command} builds the launch it serves, as in the run), then marks the
   * entry ready. Failures are logged and drop the entry.
   */
  public static void finish(Recording r, TrainingCommand command) {
    try {
      if (r.aot) {
        // the create step reads the recorded configuration and writes the cache; it runs no main
        List<String> create = new ArrayList<>();
        create.add(r.javaBinary);
        create.add("-XX:AOTMode=create");
        create.add("-XX:AOTConfiguration=" + r.entry.resolve("app.aotconf"));
        create.add("-XX:AOTCache=" + r.archive());
        create.addAll(command.build(r.extractedJar()));
        run(create, r.entry.resolve("create.log"), TRAINING_TIMEOUT);
        // the configuration is as large as the cache and no longer needed
        Files.deleteIfExists(r.entry.resolve("app.aotconf"));
      }
      markReady(r);
    } catch (IOException | RuntimeException e) {
      failed(r, e);
    } catch (InterruptedException e) {
      abandon(r);
      Thread.currentThread().interrupt();
    }
  }

  /** Marks the entry of {@code r}, whose archive is written, ready; then frees its lock. */
  static void markReady(Recording r) throws IOException {
    if (!Files.isRegularFile(r.archive())) {
      throw new IOException("no archive was written (see the logs in " + r.entry + ")");
    }
    Files.writeString(r.entry.resolve(READY), "");
    long s = (System.nanoTime() - r.started) / 1_000_000_000L;
    log.info("class-data archive of {} ready in {} s ({})", r.jar.getFileName(), s, r.entry);
    deleteRecursively(r.lock);
    prune(r.entry.getParent(), r.jar.getFileName().toString());
  }

  /** Drops the entry of a recording that did not end well, and its lock. */
  public static void abandon(Recording r) {
    deleteRecursively(r.entry);
    deleteRecursively(r.lock);
  }

  private static void failed(Recording r, Exception e) {
    log.warn(
        "cannot make a class-data archive of {} ({}): it starts from its jar, more slowly",
        r.jar.getFileName(),
        e.toString());
    abandon(r);
  }

  private static final String READY = "ready";
  private static final String CDS_FILE = "app.jsa";
  private static final String AOT_FILE = "app.aot";
  private static final Duration STALE_LOCK = Duration.ofMinutes(10);

  /** Takes the lock directory; one older than {@link #STALE_LOCK} was left by a dead process. */
  private static boolean takeLock(Path lock) throws IOException {
    try {
      Files.createDirectory(lock);
      return true;
    } catch (FileAlreadyExistsException e) {
      long age = System.currentTimeMillis() - modified(lock).toMillis();
      if (age < STALE_LOCK.toMillis()) {
        return false;
      }
      Files.setLastModifiedTime(lock, FileTime.fromMillis(System.currentTimeMillis()));
      return true;
    }
  }

  /** Builds the command that starts the extracted jar (program excluded, archive options added). */
  @FunctionalInterface
  public interface TrainingCommand {
    List<String> build(Path extractedJar);
  }

  /**
   * Lays {@code jar} out in {@code app} as {@code app/<jar's name>}, a jar whose manifest's class
   * path names plain jars beside it.
   */
  @FunctionalInterface
  public interface Extractor {
    void extract(Path jar, Path app, Path logFile) throws IOException, InterruptedException;
  }

  /** A Spring Boot jar's own extraction: {@code java -Djarmode=tools -jar app.jar extract}. */
  private static void extractBootJar(String javaBinary, Path jar, Path app, Path logFile)
      throws IOException, InterruptedException {
    run(
        List.of(
            javaBinary,
            "-Djarmode=tools",
            "-jar",
            jar.toString(),
            "extract",
            "--destination",
            app.toString()),
        logFile,
        TRAINING_TIMEOUT);
  }

  static void run(List<String> cmd, Path logFile, Duration timeout)
      throws IOException, InterruptedException {
    Files.createDirectories(logFile.getParent());
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(logFile.toFile()).start();
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      throw new IOException(
          "'" + String.join(" ", cmd.subList(0, 3)) + " ...' did not end within " + timeout);
    }
  }

  /**
   * The key of {@code jar}'s entry for {@code javaBinary}: {@link #key(Path)}, and {@code -jdk<N>}
   * after it for a JDK that makes AOT caches.
   */
  static String key(Path jar, String javaBinary) {
    return aotCache(javaBinary) ? key(jar) + "-jdk" + feature(javaBinary) : key(jar);
  }

  /** Whether {@code javaBinary} makes and uses AOT caches rather than CDS archives. */
  static boolean aotCache(String javaBinary) {
    return feature(javaBinary) >= AOT_CACHE_FEATURE;
  }

  /**
   * The feature version of {@code javaBinary} (17 for 17.0.15): this JVM's for its own binary, else
   * from {@code java -version}; 0 when unknown (null, missing, or an answer not understood), which
   * keeps the CDS archives of older JDKs.
   */
  static int feature(String javaBinary) {
    if (javaBinary == null) {
      return 0;
    }
    Path own = Path.of(System.getProperty("java.home"), "bin", "java");
    if (Path.of(javaBinary).equals(own)) {
      return Runtime.version().feature();
    }
    return FEATURES.computeIfAbsent(javaBinary, ClassDataArchives::askFeature);
  }

  private static final Pattern VERSION = Pattern.compile("version \"(?:1\\.)?(\\d+)");

  private static int askFeature(String javaBinary) {
    try {
      Process p = new ProcessBuilder(javaBinary, "-version").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return 0;
      }
      Matcher m = VERSION.matcher(out);
      return m.find() ? Integer.parseInt(m.group(1)) : 0;
    } catch (IOException e) {
      return 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
  }

  /** The jar's name and the first 16 hex digits of the SHA-256 of its bytes. */
  static String key(Path jar) {
    try {
      String id =
          jar.toAbsolutePath()
              + "|"
              + Files.size(jar)
              + "|"
              + Files.getLastModifiedTime(jar).toMillis();
      return KEYS.computeIfAbsent(id, k -> stripJar(jar) + "-" + sha256(jar));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String stripJar(Path jar) {
    String name = jar.getFileName().toString();
    return name.endsWith(".jar") ? name.substring(0, name.length() - 4) : name;
  }

  private static String sha256(Path jar) {
    try (InputStream in = Files.newInputStream(jar)) {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      byte[] buf = new byte[1 << 16];
      for (int n = in.read(buf); n > 0; n = in.read(buf)) {
        md.update(buf, 0, n);
      }
      return HexFormat.of().formatHex(md.digest(), 0, 8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Keeps the newest {@link #KEEP} entries of the jar name. */
  private static void prune(Path cache, String jarName) {
    String prefix = jarName.endsWith(".jar") ? jarName.substring(0, jarName.length() - 4) : jarName;
    try (Stream<Path> entries = Files.list(cache)) {
      List<Path> mine =
          entries
              .filter(
                  p ->
                      p.getFileName()
                          .toString()
                          .matches(Pattern.quote(prefix) + "-[0-9a-f]{16}(-jdk[0-9]+)?"))
              .sorted(Comparator.comparing(ClassDataArchives::modified).reversed())
              .toList();
      mine.stream().skip(KEEP).forEach(ClassDataArchives::deleteRecursively);
    } catch (IOException e) {
      log.debug("cannot prune {}: {}", cache, e.toString());
    }
  }

  private static FileTime modified(Path p) {
    try {
      return Files.getLastModifiedTime(p);
    } catch (IOException e) {
      return FileTime.fromMillis(0);
    }
  }

  private static void deleteRecursively(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  log.debug("cannot delete {}: {}", p, e.toString());
                }
              });
    } catch (IOException e) {
      log.debug("cannot delete {}: {}", dir, e.toString());
    }
  }
}
