package dev.paramserver.localcluster;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Finds the executable jars of the three services: in a given directory (flat, or one {@code
 * <module>/target} per service), else under the repository root: {@code $PARAMSERVER_HOME}, else
 * the working directory or one of its parents, else a parent of this library's own location.
 */
final class JarLocator {
  private static final List<Role> SERVICES = List.of(Role.MASTER, Role.PSERVER, Role.TRAINER);

  private JarLocator() {}

  /** The jar of every role, or an exception naming the missing ones and how to build them. */
  static Map<Role, Path> locate(Path jarDir) {
    if (jarDir != null) {
      return fromDir(jarDir.toAbsolutePath().normalize(), "--jar-dir " + jarDir);
    }
    Set<Path> roots = new LinkedHashSet<>();
    String home = System.getenv("PARAMSERVER_HOME");
    if (home != null && !home.isBlank()) {
      roots.add(Path.of(home).toAbsolutePath().normalize());
    }
    addWithParents(roots, Path.of("").toAbsolutePath());
    ownLocation().ifPresent(p -> addWithParents(roots, p));
    for (Path root : roots) {
      if (Files.isRegularFile(root.resolve(Role.MASTER.module()).resolve("pom.xml"))) {
        return fromDir(root, "the repository at " + root);
      }
    }
    throw new LocalClusterException(
        "cannot find the paramserver repository (looked in $PARAMSERVER_HOME, the working"
            + " directory, its parents and next to the local-cluster jar): run from the repository or"
            + " pass --jar-dir DIR");
  }

  private static Map<Role, Path> fromDir(Path dir, String where) {
    Map<Role, Path> jars = new EnumMap<>(Role.class);
    List<String> missing = new ArrayList<>();
    for (Role role : SERVICES) {
      Path jar = find(dir, role.module());
      if (jar == null) {
        jar = find(dir.resolve(role.module()).resolve("target"), role.module());
      }
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
              + "; build them with ./mvnw -B -DskipTests package (scripts/run-local.sh does)");
    }
    return jars;
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

  private static java.util.Optional<Path> ownLocation() {
    try {
      var source = JarLocator.class.getProtectionDomain().getCodeSource();
      if (source == null || source.getLocation() == null) {
        return java.util.Optional.empty();
      }
      return java.util.Optional.of(Path.of(source.getLocation().toURI()).toAbsolutePath());
    } catch (URISyntaxException | RuntimeException e) {
      // for example a nested jar inside a Boot jar: no file location to start from
      return java.util.Optional.empty();
    }
  }
}
