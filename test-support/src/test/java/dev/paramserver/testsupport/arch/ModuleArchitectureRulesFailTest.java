package dev.paramserver.testsupport.arch;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The shared rules fail on a violation and on a stale exception (over test-support's classes). */
class ModuleArchitectureRulesFailTest {
  /** The rules over this module's compiled classes, as a module's test declares them. */
  private static ModuleArchitectureTest over(ModuleRules rules) {
    ModuleArchitectureTest test =
        new ModuleArchitectureTest() {
          @Override
          protected ModuleRules rules() {
            return rules;
          }
        };
    test.importMainClasses();
    return test;
  }

  @Test
  void aClassOutsideTheDeclaredRootPackage_failsTheBuild() {
    ModuleArchitectureTest test =
        over(ModuleRules.forRootPackage("dev.paramserver.testsupport.arch"));
    assertThatThrownBy(test::mainClasses_resideUnderTheRootPackage)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("dev.paramserver.testsupport.Poll");
  }

  @Test
  void aLongFileExceptionForAShortFile_failsTheBuild() {
    ModuleArchitectureTest test =
        over(
            ModuleRules.forRootPackage("dev.paramserver.testsupport")
                .longFile("dev/paramserver/testsupport/Poll.java", "a reason"));
    assertThatThrownBy(test::noMainFile_isOverTheLineLimit_butTheNamedOnes)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("Poll.java is named as a long file")
        .hasMessageContaining("remove its exception");
  }

  @Test
  void aGrpcExceptionForAPackageWithoutGrpc_failsTheBuild() {
    ModuleArchitectureTest test =
        over(
            ModuleRules.forRootPackage("dev.paramserver.testsupport")
                .grpcPackage("dev.paramserver.testsupport.arch", "a reason"));
    assertThatThrownBy(test::domainPackages_doNotUseGrpc)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("no longer uses io.grpc");
  }
}
