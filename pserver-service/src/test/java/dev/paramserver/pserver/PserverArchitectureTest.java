package dev.paramserver.pserver;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shape of the pserver's main code (this module and pserver-core, same packages): no package
 * cycle, one owner of the shard's role, no file over 500 lines.
 */
class PserverArchitectureTest {
  private static final int MAX_LINES = 500;
  private static final JavaClasses MAIN =
      new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .importPackages("dev.paramserver.pserver");

  @Test
  void packages_areFreeOfCycles() {
    slices().matching("dev.paramserver.pserver.(*)..").should().beFreeOfCycles().check(MAIN);
  }

  @Test
  void roleChangingOperationsOfTheShard_areCalledOnlyByTheRoleLifecycle() {
    noClasses()
        .that()
        .resideOutsideOfPackages(
            "dev.paramserver.pserver.role..", "dev.paramserver.pserver.shard..")
        .should()
        .callMethod(ParameterShard.class, "holdCalls", String.class)
        .orShould()
        .callMethod(ParameterShard.class, "releaseCalls")
        .orShould()
        .callMethod(ParameterShard.class, "setIndex", int.class)
        .orShould()
        .callMethod(ParameterShard.class, "setPservers", int.class)
        .orShould()
        .callMethod(ParameterShard.class, "attachReplica", Replica.class)
        .orShould()
        .callMethod(ParameterShard.class, "beginDraining")
        .because("the shard's role has one owner: ShardLifecycle")
        .check(MAIN);
  }

  @Test
  void noMainFile_isOver500Lines() throws IOException {
    // this module's sources and those of the library it wraps
    for (Path main : List.of(Path.of("src/main/java"), Path.of("../pserver-core/src/main/java"))) {
      assertThat(main).isDirectory();
      List<String> tooLong;
      try (Stream<Path> files = Files.walk(main)) {
        tooLong =
            files
                .filter(p -> p.toString().endsWith(".java"))
                .filter(p -> lines(p) > MAX_LINES)
                .map(p -> main.relativize(p) + " (" + lines(p) + " lines)")
                .toList();
      }
      assertThat(tooLong).as("main files over %d lines: split them", MAX_LINES).isEmpty();
    }
  }

  @Test
  void theShard_staysAPassiveStoreOfAtMost400Lines() {
    Path shard = Path.of("../pserver-core/src/main/java/dev/paramserver/pserver/shard");
    assertThat(lines(shard.resolve("ParameterShard.java")))
        .as("ParameterShard holds parameters and optimizer state; its paths live beside it")
        .isLessThanOrEqualTo(400);
  }

  private static long lines(Path p) {
    try (Stream<String> s = Files.lines(p)) {
      return s.count();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
