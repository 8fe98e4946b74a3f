package dev.paramserver.localcluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The JVM options that shorten a service's start-up, added to every launch of a master, pserver or
 * trainer (docs/how-to/run-locally.md, "Start-up").
 *
 * <p><b>Spring AOT</b> ({@code -Dspring.aot.enabled=true}): the build computes each service's bean
 * definitions ahead of time ({@code spring-boot-maven-plugin}'s {@code process-aot}), so the
 * process neither scans and parses its configuration classes nor creates its beans by reflection.
 * The conditions of those beans were evaluated at build time, with the properties the jar carries:
 * a launch that sets a property a condition reads ({@link #CONDITION_PREFIXES}, on its command line
 * or in the environment it inherits) starts the regular way, as does a jar built without the step
 * (an older release) and every launch when {@code PARAMSERVER_SPRING_AOT} is {@code off}.
 *
 * <p><b>The JIT on a JDK with AOT caches</b> (24 and later) for pservers and trainers: their
 * compile thresholds scaled by {@value #THRESHOLD_SCALING} and the cache's recorded method profiles
 * not replayed. C2 otherwise spent as much CPU compiling run-once start-up code (collections,
 * strings, the class-file reader) as the process spent running it; the hot loops of training run
 * millions of times and are compiled still, a few seconds later.
 */
public final class StartupOptions {
  static final String SPRING_AOT = "-Dspring.aot.enabled=true";
  static final int THRESHOLD_SCALING = 5;
  static final List<String> AOT_JDK_JIT_OPTIONS =
      List.of(
          "-XX:+UnlockDiagnosticVMOptions",
          "-XX:-AOTReplayTraining",
          "-XX:CompileThresholdScaling=" + THRESHOLD_SCALING);

  /**
   * Properties some bean condition of the services (or of Spring Boot's auto-configuration) reads:
   * a launch that sets one of them computes its beans at start instead.
   */
  static final List<String> CONDITION_PREFIXES =
      List.of(
          "spring.",
          "server.ssl",
          "management.",
          "paramserver.grpc-client.tls.",
          "paramserver.pserver.kubernetes.",
          "paramserver.trainer.coordination.mode");

  /** Properties every launch sets, which no condition reads. */
  private static final List<String> LAUNCH_PROPERTIES =
      List.of("spring.grpc.server.address", "spring.grpc.server.port");

  private static final Map<String, Boolean> PROCESSED = new ConcurrentHashMap<>();

  private StartupOptions() {}

  /**
   * The options for launching {@code jar} as {@code role} on {@code javaBinary} with {@code
   * properties} (the command line's Spring properties).
   */
  static List<String> of(Role role, Path jar, String javaBinary, Map<String, String> properties) {
    List<String> options = new ArrayList<>();
    if (role == Role.SERVING) {
      return options;
    }
    if (springAotEnabled()
        && aotProcessed(jar)
        && !readsConditions(properties)
        && !environmentReadsConditions(System.getenv())) {
      options.add(SPRING_AOT);
    }
    if ((role == Role.PSERVER || role == Role.TRAINER) && ClassDataArchives.aotCache(javaBinary)) {
      options.addAll(AOT_JDK_JIT_OPTIONS);
    }
    return options;
  }

  /** Unless {@code PARAMSERVER_SPRING_AOT} is {@code off}. */
  static boolean springAotEnabled() {
    String v = System.getenv("PARAMSERVER_SPRING_AOT");
    return v == null || !v.equalsIgnoreCase("off");
  }

  /** Whether any of {@code properties} is one a bean condition reads. */
  static boolean readsConditions(Map<String, String> properties) {
    for (String key : properties.keySet()) {
      String k = key.startsWith("--") ? key.substring(2) : key;
      if (LAUNCH_PROPERTIES.contains(k)) {
        continue;
      }
      for (String prefix : CONDITION_PREFIXES) {
        if (k.startsWith(prefix)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Whether {@code environment} (which the services inherit) sets one of {@link
   * #CONDITION_PREFIXES} in Spring's environment-variable form ({@code SPRING_PROFILES_ACTIVE},
   * {@code MANAGEMENT_SERVER_PORT}).
   */
  public static boolean environmentReadsConditions(Map<String, String> environment) {
    for (String name : environment.keySet()) {
      String n = name.toUpperCase(java.util.Locale.ROOT).replace("-", "");
      for (String prefix : CONDITION_PREFIXES) {
        String p = prefix.toUpperCase(java.util.Locale.ROOT).replace("-", "").replace('.', '_');
        if (n.startsWith(p)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Whether {@code jar} holds the bean definitions the build computed (its application class's
   * {@code __ApplicationContextInitializer}): a Spring Boot executable jar ({@code Start-Class},
   * classes under {@code Spring-Boot-Classes}) or its extracted copy ({@code Main-Class}, classes
   * at the root).
   */
  static boolean aotProcessed(Path jar) {
    if (jar == null || !Files.isRegularFile(jar)) {
      return false;
    }
    try {
      String key =
          jar.toAbsolutePath() + ":" + Files.size(jar) + ":" + Files.getLastModifiedTime(jar);
      return PROCESSED.computeIfAbsent(key, k -> readJar(jar));
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean readJar(Path jar) {
    try (JarFile f = new JarFile(jar.toFile())) {
      Manifest m = f.getManifest();
      if (m == null) {
        return false;
      }
      String start = m.getMainAttributes().getValue("Start-Class");
      String dir = "";
      if (start != null) {
        String classes = m.getMainAttributes().getValue("Spring-Boot-Classes");
        dir = classes == null ? "BOOT-INF/classes/" : classes;
      } else {
        start = m.getMainAttributes().getValue("Main-Class");
      }
      return start != null
          && f.getEntry(dir + start.replace('.', '/') + "__ApplicationContextInitializer.class")
              != null;
    } catch (IOException | SecurityException e) {
      return false;
    }
  }
}
