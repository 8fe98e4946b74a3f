package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Finds the executable jars of the three services, and of serving-service when it was built: in a
 * given directory (flat, or one {@code <module>/target} per service), else under the repository
 * root: {@code $PARAMSERVER_HOME}, else the working directory or one of its parents, else a parent
 * of this library's own location. Used by {@code run-local}, the benchmarks and the end-to-end
 * tests; the tests also refuse jars older than the sources they were built from ({@link
 * #locateFresh()}).
 */
public final class JarLocator {
  static final String REBUILD = "./mvnw -B -DskipTests package";
  private static final List<Role> SERVICES = List.of(Role.MASTER, Role.PSERVER, Role.TRAINER);

  /** Roles whose jar is used when it was built and only needed when the cluster runs the role. */
  private static final List<Role> OPTIONAL = List.of(Role.SERVING);

  private static final Pattern DEPENDENCY =
      Pattern.compile("<dependency>(.*?)</dependency>", Pattern.DOTALL);
  private static final Pattern PROJECT_ARTIFACT =
      Pattern.compile("<groupId>dev\\.paramserver</groupId>\\s*<artifactId>([^<]+)</artifactId>");

  private JarLocator() {}

  /**
   * The jar of every role in {@code jarDir} (flat or {@code <module>/target}), or in the repository
   * when {@code jarDir} is null.
   *
   * @throws LocalClusterException naming the missing jars and how to build them
   */
  public static Map<Role, Path> locate(Path jarDir) {
    if (jarDir != null) {
      return fromDir(jarDir.toAbsolutePath().normalize(), "--jar-dir " + jarDir);
    }
    Path root = repository(true);
    return fromDir(root, "the repository at " + root);
  }

  /**
   * The jars of the repository, each checked to be newer than every source it is built from (the
   * {@code src/main} of its module and of every project module it depends on), so a test never runs
   * code older than what it tests. The repository holding the working directory comes first here,
   * so the tests of a checkout use that checkout's jars whatever $PARAMSERVER_HOME says.
   *
   * @throws LocalClusterException naming the stale jar, the newer source and the rebuild command
   */
  public static Map<Role, Path> locateFresh() {
    Path root = repository(false);
    Map<Role, Path> jars = fromDir(root, "the repository at " + root);
    jars.forEach((role, jar) -> requireNewerThanSources(jar, root, role.module()));
    return jars;
  }

  /**
   * The repository root: {@code $PARAMSERVER_HOME} (first only when {@code homeFirst}), the working
   * directory or a parent, or a parent of this library's location, whichever first holds the
   * services' modules.
   */
  private static Path repository(boolean homeFirst) {
    Set<Path> roots = new LinkedHashSet<>();
    if (!homeFirst) {
      addWithParents(roots, Path.of("").toAbsolutePath());
    }
    String home = System.getenv("PARAMSERVER_HOME");
    if (home != null && !home.isBlank()) {
      roots.add(Path.of(home).toAbsolutePath().normalize());
    }
    addWithParents(roots, Path.of("").toAbsolutePath());
    ownLocation().ifPresent(p -> addWithParents(roots, p));
    for (Path root : roots) {
      if (Files.isRegularFile(root.resolve(Role.MASTER.module()).resolve("pom.xml"))) {
        return root;
      }
    }
    throw new LocalClusterException(
        "cannot find the paramserver repository (looked in $PARAMSERVER_HOME, the working"
            + " directory, its parents and next to the local-cluster jar): run from the repository or"
            + " pass --jar-dir DIR");
  }

  /**
   * Fails when {@code jar} is older than a source of {@code module} in {@code root} or of a project
   * module it depends on (outside the test scope).
   */
  static void requireNewerThanSources(Path jar, Path root, String module) {
    FileTime built = modified(jar);
    Set<String> modules = new LinkedHashSet<>();
    collectModules(root, module, modules);
    for (String m : modules) {
      Path source = root.resolve(m).resolve("src").resolve("main");
      Optional<Path> newer = newestFile(source).filter(f -> modified(f).compareTo(built) > 0);
      if (newer.isPresent()) {
        throw new LocalClusterException(
            jar
                + " (built "
                + built
                + ") is older than "
                + root.relativize(newer.get())
                + " (changed "
                + modified(newer.get())
                + "): the tests would run old code; rebuild with "
                + REBUILD);
      }
    }
  }

  /** {@code module} and every project module it depends on, transitively, test scope excluded. */
  private static void collectModules(Path root, String module, Set<String> out) {
    if (!out.add(module)) {
      return;
    }
    Path pom = root.resolve(module).resolve("pom.xml");
    String text;
    try {
      text = Files.readString(pom);
    } catch (IOException e) {
      throw new LocalClusterException("cannot read " + pom + ": " + e.getMessage(), e);
    }
    Matcher dep = DEPENDENCY.matcher(text);
    while (dep.find()) {
      String body = dep.group(1);
      Matcher artifact = PROJECT_ARTIFACT.matcher(body);
      if (artifact.find() && !body.contains("<scope>test</scope>")) {
        collectModules(root, artifact.group(1).trim(), out);
      }
    }
  }

  private static Optional<Path> newestFile(Path source) {
    if (!Files.isDirectory(source)) {
      return Optional.empty();
    }
    try (Stream<Path> files = Files.walk(source)) {
      return files.filter(Files::isRegularFile).max((a, b) -> modified(a).compareTo(modified(b)));
    } catch (IOException | UncheckedIOException e) {
      throw new LocalClusterException("cannot list " + source + ": " + e.getMessage(), e);
    }
  }

  private static FileTime modified(Path file) {
    try {
      return Files.getLastModifiedTime(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Map<Role, Path> fromDir(Path dir, String where) {
    Map<Role, Path> jars = new EnumMap<>(Role.class);
    List<String> missing = new ArrayList<>();
    for (Role role : SERVICES) {
      Path jar = findIn(dir, role);
      if (jar == null) {
        missing.add(role.module() + "-*-exec.jar");
      } else {
        jars.put(role, jar);
      }
    }
    if (!missing.isEmpty()) {
      throw new LocalClusterException(
          "service jars missing in "
              + where
              + ": "
              + missing
              + "; build them with "
              + REBUILD
              + " (scripts/run-local.sh does)");
    }
    for (Role role : OPTIONAL) {
      Path jar = findIn(dir, role);
      if (jar != null) {
        jars.put(role, jar);
      }
    }
    return jars;
  }

  /** The role's newest jar in {@code dir} or in {@code dir/<module>/target}, or null. */
  private static Path findIn(Path dir, Role role) {
    Path jar = find(dir, role.module());
    return jar != null ? jar : find(dir.resolve(role.module()).resolve("target"), role.module());
  }

  /** The newest {@code <module>-*-exec.jar} in {@code dir}, or null. */
  static Path find(Path dir, String module) {
    if (!Files.isDirectory(dir)) {
      return null;
    }
    Path best = null;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, module + "-*-exec.jar")) {
      for (Path f : files) {
        if (best == null
            || Files.getLastModifiedTime(f).compareTo(Files.getLastModifiedTime(best)) > 0) {
          best = f;
        }
      }
    } catch (IOException e) {
      return null;
    }
    return best;
  }

  private static void addWithParents(Set<Path> roots, Path start) {
    for (Path p = start.normalize(); p != null; p = p.getParent()) {
      roots.add(p);
    }
  }

  private static Optional<Path> ownLocation() {
    try {
      var source = JarLocator.class.getProtectionDomain().getCodeSource();
      if (source == null || source.getLocation() == null) {
        return Optional.empty();
      }
      return Optional.of(Path.of(source.getLocation().toURI()).toAbsolutePath());
    } catch (URISyntaxException | RuntimeException e) {
      // for example a nested jar inside a Boot jar: no file location to start from
      return Optional.empty();
    }
  }
}
