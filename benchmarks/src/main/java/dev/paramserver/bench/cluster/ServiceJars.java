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

  private ServiceJars() {}

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
    ClusterSpec.Builder b = ClusterSpec.builder(runDir).maxRestarts(0);
    jars.forEach(b::jar);
    return b;
  }

  /** The project's default JVM options of the role plus {@code more}. */
  public static List<String> jvmOptions(Role role, String... more) {
    List<String> l = new ArrayList<>(ClusterSpec.defaultJvmOptions(role));
    l.addAll(List.of(more));
    return l;
  }
}
