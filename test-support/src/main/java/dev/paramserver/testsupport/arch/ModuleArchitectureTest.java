package dev.paramserver.testsupport.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import com.tngtech.archunit.library.dependencies.SliceRule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The rules every module's main code obeys (docs/how-to/develop.md, "Rules the build checks"). A
 * module applies them with a small subclass that declares its {@link ModuleRules}: root package and
 * named exceptions, each with its reason. The rules:
 *
 * <ul>
 *   <li>no package cycle, the root package counted as a package of its own, and no exception to
 *       this one;
 *   <li>no main source file over {@value ModuleRules#MAX_LINES} lines;
 *   <li>every main class under the module's root package (no package split across modules);
 *   <li>gRPC services ({@code io.grpc.BindableService}) and HTTP controllers only in {@code grpc}
 *       or {@code web} packages;
 *   <li>no {@code io.grpc} outside those adapter packages (domain code is transport-free).
 * </ul>
 *
 * <p>An exception that no longer matches anything fails too, so it is removed with the fix.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class ModuleArchitectureTest {
  private static final String[] ADAPTER_PACKAGES = {"..grpc..", "..web.."};

  private ModuleRules rules;
  private JavaClasses main;

  /** This module's root package and exceptions. */
  protected abstract ModuleRules rules();

  /** The module's compiled main classes (and those of {@link ModuleRules#alsoModule}). */
  protected final JavaClasses mainClasses() {
    return main;
  }

  @BeforeAll
  final void importMainClasses() {
    rules = rules();
    List<Path> dirs = new ArrayList<>();
    for (ModuleRules.Module m : rules.modules()) {
      Path classes = m.dir().resolve("target/classes");
      if (!Files.isDirectory(classes)) {
        throw new IllegalStateException(
            classes.toAbsolutePath() + " is missing: compile the module before its tests");
      }
      dirs.add(classes);
    }
    main =
        new ClassFileImporter().withImportOption(l -> !l.matches(AOT_GENERATED)).importPaths(dirs);
  }

  // Spring AOT (process-aot, at package time) compiles the bean definitions it generates into
  // target/classes, in the packages of the classes they describe, Spring's own included: a build
  // packaged before runs the rules on them too. They are the framework's code, not the module's.
  private static final java.util.regex.Pattern AOT_GENERATED =
      java.util.regex.Pattern.compile(
          ".*(__(BeanDefinitions|BeanFactoryRegistrations|ApplicationContextInitializer|Autowiring)"
              + "|\\$\\$SpringCGLIB\\$\\$).*");

  @Test
  void packages_areFreeOfCycles_theRootPackageCounted() {
    // no exception can be named: a cycle is broken by moving the shared type into the lower
    // package (or a small package of its own), with interfaces owned by the lower layer
    SliceRule rule = slices().assignedFrom(new TopLevelPackages(rules)).should().beFreeOfCycles();
    rule.check(main);
  }

  @Test
  void noMainFile_isOverTheLineLimit_butTheNamedOnes() throws IOException {
    Map<String, Long> tooLong = new TreeMap<>();
    for (ModuleRules.Module m : rules.modules()) {
      Path src = m.dir().resolve("src/main/java");
      try (Stream<Path> files = Files.walk(src)) {
        files
            .filter(p -> p.toString().endsWith(".java"))
            .forEach(
                p -> {
                  long n = lines(p);
                  if (n > ModuleRules.MAX_LINES) {
                    tooLong.put(src.relativize(p).toString().replace('\\', '/'), n);
                  }
                });
      }
    }
    List<String> problems = new ArrayList<>();
    tooLong.forEach(
        (path, n) -> {
          if (!rules.longFiles().containsKey(path)) {
            problems.add(path + " has " + n + " lines: split it by responsibility");
          }
        });
    for (String path : rules.longFiles().keySet()) {
      if (!tooLong.containsKey(path)) {
        problems.add(
            path
                + " is named as a long file but is not over "
                + ModuleRules.MAX_LINES
                + " lines (or is gone): remove its exception");
      }
    }
    if (!problems.isEmpty()) {
      throw new AssertionError(
          "main files over "
              + ModuleRules.MAX_LINES
              + " lines:\n  "
              + String.join("\n  ", problems));
    }
  }

  @Test
  void mainClasses_resideUnderTheRootPackage() {
    List<String> packages = new ArrayList<>();
    for (ModuleRules.Module m : rules.modules()) {
      packages.add(m.rootPackage() + "..");
    }
    packages.addAll(rules.foreignPackages().keySet());
    classes()
        .should()
        .resideInAnyPackage(packages.toArray(String[]::new))
        .because("a package split across modules has two owners")
        .check(main);
    for (String foreign : rules.foreignPackages().keySet()) {
      if (main.stream().noneMatch(c -> c.getPackageName().equals(foreign))) {
        throw new AssertionError(
            "the foreign package exception " + foreign + " matches no class: remove it");
      }
    }
  }

  @Test
  void grpcServicesAndHttpControllers_liveInAdapterPackages() {
    DescribedPredicate<JavaClass> adapter =
        DescribedPredicate.describe(
            "gRPC services and HTTP controllers",
            c ->
                !c.isInterface()
                    && (c.isAssignableTo("io.grpc.BindableService")
                        || c.isAnnotatedWith(
                            "org.springframework.web.bind.annotation.RestController")
                        || c.isAnnotatedWith("org.springframework.stereotype.Controller")));
    DescribedPredicate<JavaClass> named =
        DescribedPredicate.describe(
            "named exceptions", c -> rules.adapterClasses().containsKey(c.getName()));
    classes()
        .that(adapter.and(DescribedPredicate.not(named)))
        .should()
        .resideInAnyPackage(ADAPTER_PACKAGES)
        .because("gRPC services and HTTP controllers are thin adapters over domain classes")
        .allowEmptyShould(true)
        .check(main);
    for (String name : rules.adapterClasses().keySet()) {
      if (!main.contain(name) || !adapter.test(main.get(name))) {
        throw new AssertionError(
            "the adapter exception "
                + name
                + " names no gRPC service or HTTP controller: remove it");
      }
    }
  }

  @Test
  void domainPackages_doNotUseGrpc() {
    DescribedPredicate<JavaClass> allowed =
        DescribedPredicate.describe(
            "in a named gRPC package",
            c -> rules.grpcPackages().keySet().stream().anyMatch(p -> inSlice(p).test(c)));
    noClasses()
        .that()
        .resideOutsideOfPackages(ADAPTER_PACKAGES)
        .and(DescribedPredicate.not(allowed))
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.grpc..")
        .because("domain classes never import io.grpc: adapters convert and map errors")
        .allowEmptyShould(true)
        .check(main);
    for (String p : rules.grpcPackages().keySet()) {
      boolean uses =
          main.stream()
              .filter(inSlice(p))
              .anyMatch(
                  c ->
                      c.getDirectDependenciesFromSelf().stream()
                          .anyMatch(
                              d -> d.getTargetClass().getPackageName().startsWith("io.grpc")));
      if (!uses) {
        throw new AssertionError(
            "the gRPC package exception " + p + " no longer uses io.grpc: remove it");
      }
    }
  }

  /**
   * The classes of {@code packageName}: a package under a root package with its subpackages, or a
   * root package alone.
   */
  private DescribedPredicate<JavaClass> inSlice(String packageName) {
    boolean root = rules.modules().stream().anyMatch(m -> m.rootPackage().equals(packageName));
    return root
        ? DescribedPredicate.describe(
            "in " + packageName, c -> c.getPackageName().equals(packageName))
        : inPackage(packageName);
  }

  /** Classes in {@code packageName} or a subpackage of it. */
  private static DescribedPredicate<JavaClass> inPackage(String packageName) {
    return DescribedPredicate.describe(
        "in " + packageName,
        c ->
            c.getPackageName().equals(packageName)
                || c.getPackageName().startsWith(packageName + "."));
  }

  private static long lines(Path p) {
    try (Stream<String> s = Files.lines(p)) {
      return s.count();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * One slice per package directly under a root package, and one for the root package itself (a
   * cycle through the root package counts like any other).
   */
  private static final class TopLevelPackages implements SliceAssignment {
    private final ModuleRules rules;

    TopLevelPackages(ModuleRules rules) {
      this.rules = rules;
    }

    @Override
    public SliceIdentifier getIdentifierOf(JavaClass c) {
      String p = c.getPackageName();
      for (ModuleRules.Module m : rules.modules()) {
        String root = m.rootPackage();
        if (p.equals(root)) {
          return SliceIdentifier.of(root + " (root)");
        }
        if (p.startsWith(root + ".")) {
          String rest = p.substring(root.length() + 1);
          int dot = rest.indexOf('.');
          return SliceIdentifier.of(root + "." + (dot < 0 ? rest : rest.substring(0, dot)));
        }
      }
      return SliceIdentifier.ignore();
    }

    @Override
    public String getDescription() {
      return "the packages under the root package, and the root package itself";
    }
  }
}
