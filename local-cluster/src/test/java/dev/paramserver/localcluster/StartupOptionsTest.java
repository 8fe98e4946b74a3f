package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StartupOptionsTest {
  private static final String APP = "dev.example.App";
  private static final String INITIALIZER = "dev/example/App__ApplicationContextInitializer.class";

  @TempDir Path dir;

  /** A jar with {@code attributes} in its manifest and an empty entry per name. */
  private Path jar(String name, Map<String, String> attributes, String... entries)
      throws Exception {
    Manifest m = new Manifest();
    m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    attributes.forEach((k, v) -> m.getMainAttributes().putValue(k, v));
    Path jar = dir.resolve(name);
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream j = new JarOutputStream(out, m)) {
      for (String e : entries) {
        j.putNextEntry(new JarEntry(e));
        j.closeEntry();
      }
    }
    return jar;
  }

  private Path bootJar(boolean processed) throws Exception {
    Map<String, String> manifest =
        Map.of(
            "Main-Class", "org.springframework.boot.loader.launch.JarLauncher",
            "Start-Class", APP,
            "Spring-Boot-Classes", "BOOT-INF/classes/");
    return processed
        ? jar(
            "processed.jar",
            manifest,
            "BOOT-INF/classes/dev/example/App.class",
            "BOOT-INF/classes/" + INITIALIZER)
        : jar("plain.jar", manifest, "BOOT-INF/classes/dev/example/App.class");
  }

  @Test
  void aotProcessed_findsTheInitializerOfTheStartClass_inABootJarAndInItsExtractedCopy()
      throws Exception {
    assertThat(StartupOptions.aotProcessed(bootJar(true))).isTrue();
    assertThat(StartupOptions.aotProcessed(bootJar(false))).isFalse();
    // the extracted copy the class-data archives launch: the application as Main-Class, its
    // classes at the root
    Path extracted =
        jar("extracted.jar", Map.of("Main-Class", APP), "dev/example/App.class", INITIALIZER);
    assertThat(StartupOptions.aotProcessed(extracted)).isTrue();
    // not a jar, or no jar at all: started the regular way
    assertThat(StartupOptions.aotProcessed(Files.createFile(dir.resolve("empty.jar")))).isFalse();
    assertThat(StartupOptions.aotProcessed(dir.resolve("missing.jar"))).isFalse();
    assertThat(StartupOptions.aotProcessed(null)).isFalse();
  }

  @Test
  void readsConditions_onlyForPropertiesABeanConditionReads() {
    // what every local launch sets
    assertThat(
            StartupOptions.readsConditions(
                Map.of(
                    "server.address", "127.0.0.1",
                    "server.port", "8080",
                    "spring.grpc.server.address", "127.0.0.1",
                    "spring.grpc.server.port", "9090",
                    "paramserver.pserver.wal.enabled", "true",
                    "paramserver.trainer.coordination.masters", "127.0.0.1:1")))
        .isFalse();
    for (String key :
        List.of(
            "spring.ssl.bundle.pem.server.keystore.certificate",
            "spring.grpc.server.ssl.bundle",
            "server.ssl.enabled",
            "management.server.port",
            "paramserver.grpc-client.tls.enabled",
            "paramserver.pserver.kubernetes.stateful-set",
            "paramserver.trainer.coordination.mode",
            "--management.endpoints.web.exposure.include")) {
      assertThat(StartupOptions.readsConditions(Map.of(key, "x"))).as(key).isTrue();
    }
  }

  @Test
  void environmentReadsConditions_inSpringsEnvironmentVariableForm() {
    assertThat(
            StartupOptions.environmentReadsConditions(
                Map.of("PATH", "/usr/bin", "PARAMSERVER_CDS", "off", "JAVA_HOME", "/opt/java")))
        .isFalse();
    for (String name :
        List.of(
            "SPRING_PROFILES_ACTIVE",
            "SPRING_APPLICATION_JSON",
            "MANAGEMENT_SERVER_PORT",
            "SERVER_SSL_ENABLED",
            "PARAMSERVER_GRPCCLIENT_TLS_ENABLED",
            "PARAMSERVER_PSERVER_KUBERNETES_STATEFULSET",
            "PARAMSERVER_TRAINER_COORDINATION_MODE")) {
      assertThat(StartupOptions.environmentReadsConditions(Map.of(name, "x"))).as(name).isTrue();
    }
  }

  @Test
  void of_springAotForAProcessedJarWithoutConditionProperties_jitOptionsOnAnAotJdkOnly()
      throws Exception {
    Path processed = bootJar(true);
    String unknownJava = dir.resolve("no-java").toString();
    assertThat(StartupOptions.of(Role.MASTER, processed, unknownJava, Map.of()))
        .containsExactly(StartupOptions.SPRING_AOT);
    assertThat(StartupOptions.of(Role.PSERVER, bootJar(false), unknownJava, Map.of())).isEmpty();
    assertThat(
            StartupOptions.of(
                Role.TRAINER,
                processed,
                unknownJava,
                Map.of("paramserver.trainer.coordination.mode", "master")))
        .isEmpty();
    // serving replicas start the regular way (their jar is not processed)
    assertThat(StartupOptions.of(Role.SERVING, processed, unknownJava, Map.of())).isEmpty();

    String thisJava = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> pserver = StartupOptions.of(Role.PSERVER, processed, thisJava, Map.of());
    List<String> master = StartupOptions.of(Role.MASTER, processed, thisJava, Map.of());
    if (Runtime.version().feature() >= ClassDataArchives.AOT_CACHE_FEATURE) {
      assertThat(pserver).containsSubsequence(StartupOptions.AOT_JDK_JIT_OPTIONS);
    } else {
      assertThat(pserver).containsExactly(StartupOptions.SPRING_AOT);
    }
    assertThat(master).containsExactly(StartupOptions.SPRING_AOT);
  }

  @Test
  void aotJdkJitOptions_areAcceptedByAJdkWithAotCaches() throws Exception {
    Optional<String> java = aotJdk();
    Assumptions.assumeTrue(java.isPresent(), "no JDK with AOT caches here");
    List<String> cmd = new ArrayList<>(List.of(java.get()));
    cmd.addAll(StartupOptions.AOT_JDK_JIT_OPTIONS);
    cmd.add("-version");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
  }

  /** This JVM if it has AOT caches, else one installed under /usr/lib/jvm that has. */
  private static Optional<String> aotJdk() throws Exception {
    List<Path> candidates =
        new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")));
    Path jvms = Path.of("/usr/lib/jvm");
    if (Files.isDirectory(jvms)) {
      try (Stream<Path> s = Files.list(jvms)) {
        s.map(d -> d.resolve("bin").resolve("java"))
            .filter(Files::isExecutable)
            .forEach(candidates::add);
      }
    }
    return candidates.stream().map(Path::toString).filter(ClassDataArchives::aotCache).findFirst();
  }
}
