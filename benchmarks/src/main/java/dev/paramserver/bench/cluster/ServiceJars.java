package dev.paramserver.bench.cluster;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JarLocator;
import dev.paramserver.localcluster.Role;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The services' executable jars, copied into the run folder first so a rebuild of the repository
 * during the run cannot swap a jar under a starting process.
 */
public final class ServiceJars {
  private final Map<Role, Path> jars = new EnumMap<>(Role.class);
  // the java that runs the services; null: the one running the bench
  private String javaBinary;

  private ServiceJars() {}

  /** These jars, run by {@code javaBinary} (a java binary, as {@code /usr/bin/java}). */
  public ServiceJars withJava(String javaBinary) {
    ServiceJars s = new ServiceJars();
    s.jars.putAll(jars);
    s.javaBinary = javaBinary;
    return s;
  }

  /** Copies the exec jar of each role, found by {@link JarLocator} in {@code repo}. */
  public static ServiceJars copy(Path repo, Path runDir) throws IOException {
    ServiceJars s = new ServiceJars();
    Path dir = Files.createDirectories(runDir.resolve("jars"));
    for (Map.Entry<Role, Path> e : JarLocator.locate(repo).entrySet()) {
      Path copy = dir.resolve(e.getValue().getFileName());
      Files.copy(e.getValue(), copy, StandardCopyOption.REPLACE_EXISTING);
      s.jars.put(e.getKey(), copy);
    }
    return s;
  }

  public Path jar(Role role) {
    return jars.get(role);
  }

  /** A cluster spec builder with these jars, in {@code runDir}. */
  public ClusterSpec.Builder spec(Path runDir) {
    // missing start-up archives come from a short training job, as run-local's do
    ClusterSpec.Builder b = ClusterSpec.builder(runDir).maxRestarts(0).archiveTrainingJob(true);
    jars.forEach(b::jar);
    if (javaBinary != null) {
      b.javaBinary(javaBinary);
    }
    return b;
  }

  /** The project's default JVM options of the role plus {@code more}. */
  public static List<String> jvmOptions(Role role, String... more) {
    List<String> l = new ArrayList<>(ClusterSpec.defaultJvmOptions(role));
    l.addAll(List.of(more));
    return l;
  }
}
