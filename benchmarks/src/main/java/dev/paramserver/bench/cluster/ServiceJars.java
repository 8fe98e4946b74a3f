package dev.paramserver.bench.cluster;

import dev.paramserver.localcluster.ClusterSpec;
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

  /** Copies {@code <repo>/<module>/target/<module>-0.1.0-SNAPSHOT-exec.jar} of each role. */
  public static ServiceJars copy(Path repo, Path runDir) throws IOException {
    ServiceJars s = new ServiceJars();
    Path dir = Files.createDirectories(runDir.resolve("jars"));
    for (Role role : Role.values()) {
      String module =
          switch (role) {
            case MASTER -> "master-service";
            case PSERVER -> "pserver-service";
            case TRAINER -> "trainer-agent";
          };
      Path jar =
          repo.resolve(module).resolve("target").resolve(module + "-0.1.0-SNAPSHOT-exec.jar");
      if (!Files.isRegularFile(jar)) {
        throw new IllegalStateException(
            "executable jar "
                + jar
                + " is missing: build it with ./mvnw -B -q -DskipTests package (scripts/bench.sh does)");
      }
      Path copy = dir.resolve(jar.getFileName());
      Files.copy(jar, copy, StandardCopyOption.REPLACE_EXISTING);
      s.jars.put(role, copy);
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
