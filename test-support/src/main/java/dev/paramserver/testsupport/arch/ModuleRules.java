package dev.paramserver.testsupport.arch;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one module declares to the shared architecture rules ({@link ModuleArchitectureTest}): its
 * root package, where its main sources and classes are, and every exception to a rule, each with
 * its reason. An exception without a reason is refused; an exception that no longer matches a
 * violation fails the build, so it is removed when the code is fixed.
 */
public final class ModuleRules {
  /** The longest main source file allowed, in lines (CONVENTIONS.md: past ~400, split). */
  public static final int MAX_LINES = 500;

  /** A module's directory (relative to the working directory) and the package its code lives in. */
  record Module(Path dir, String rootPackage) {}

  private final List<Module> modules = new ArrayList<>();
  private final Map<String, String> longFiles = new LinkedHashMap<>();
  private final Map<String, String> foreignPackages = new LinkedHashMap<>();
  private final Map<String, String> grpcPackages = new LinkedHashMap<>();
  private final Map<String, String> adapterClasses = new LinkedHashMap<>();

  private ModuleRules(String rootPackage) {
    modules.add(new Module(Path.of(""), rootPackage));
  }

  /**
   * The rules for the module in the working directory (Surefire runs tests there), whose main
   * classes all live under {@code rootPackage}.
   */
  public static ModuleRules forRootPackage(String rootPackage) {
    return new ModuleRules(requirePackage(rootPackage));
  }

  /**
   * Checks another module's main code with this one ({@code dir} relative to this module, e.g.
   * {@code ../pserver-core}, its code under {@code rootPackage}): for a library that shares this
   * module's packages, or one that test-support depends on and that cannot depend on it.
   */
  public ModuleRules alsoModule(String dir, String rootPackage) {
    modules.add(new Module(Path.of(dir), requirePackage(rootPackage)));
    return this;
  }

  private static String requirePackage(String name) {
    if (name == null || !name.matches("[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*")) {
      throw new IllegalArgumentException("not a Java package name: '" + name + "'");
    }
    return name;
  }

  /**
   * Allows the main source file {@code path} (relative to {@code src/main/java}, e.g. {@code
   * dev/paramserver/master/task/MasterJob.java}) to exceed {@link #MAX_LINES} lines.
   */
  public ModuleRules longFile(String path, String reason) {
    longFiles.put(path, requireReason(path, reason));
    return this;
  }

  /** Allows main classes in {@code packageName}, outside the root package (a split package). */
  public ModuleRules foreignPackage(String packageName, String reason) {
    foreignPackages.put(packageName, requireReason(packageName, reason));
    return this;
  }

  /**
   * Allows classes of {@code packageName} (and its subpackages) to use {@code io.grpc}, besides the
   * adapter packages {@code grpc} and {@code web}: transport libraries and clients.
   */
  public ModuleRules grpcPackage(String packageName, String reason) {
    grpcPackages.put(packageName, requireReason(packageName, reason));
    return this;
  }

  /**
   * Allows the gRPC service or HTTP controller {@code className} (fully qualified) outside a {@code
   * grpc} or {@code web} package.
   */
  public ModuleRules adapterOutsideAdapterPackages(String className, String reason) {
    adapterClasses.put(className, requireReason(className, reason));
    return this;
  }

  private static String requireReason(String what, String reason) {
    if (reason == null || reason.isBlank()) {
      throw new IllegalArgumentException(
          "the exception for " + what + " needs a reason (why, and what would remove it)");
    }
    return reason;
  }

  List<Module> modules() {
    return List.copyOf(modules);
  }

  Map<String, String> longFiles() {
    return Map.copyOf(longFiles);
  }

  Map<String, String> foreignPackages() {
    return Map.copyOf(foreignPackages);
  }

  Map<String, String> grpcPackages() {
    return Map.copyOf(grpcPackages);
  }

  Map<String, String> adapterClasses() {
    return Map.copyOf(adapterClasses);
  }
}
