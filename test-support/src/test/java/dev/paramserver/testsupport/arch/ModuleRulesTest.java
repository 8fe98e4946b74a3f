package dev.paramserver.testsupport.arch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ModuleRulesTest {
  @Test
  void anExceptionWithoutAReason_isRefused_namingWhatItWouldExcuse() {
    ModuleRules rules = ModuleRules.forRootPackage("dev.paramserver.master");
    assertThatThrownBy(() -> rules.longFile("dev/paramserver/master/task/MasterJob.java", " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("MasterJob.java")
        .hasMessageContaining("needs a reason");
    assertThatThrownBy(() -> rules.foreignPackage("dev.paramserver.master.task", null))
        .hasMessageContaining("dev.paramserver.master.task");
    assertThatThrownBy(() -> rules.grpcPackage("dev.paramserver.master.console", ""))
        .hasMessageContaining("dev.paramserver.master.console");
  }

  @Test
  void aRootPackage_mustBeAJavaPackageName() {
    assertThatThrownBy(() -> ModuleRules.forRootPackage("dev/paramserver/master"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'dev/paramserver/master'");
    assertThatThrownBy(
            () -> ModuleRules.forRootPackage("dev.paramserver.x").alsoModule("../y", "Y..z"))
        .hasMessageContaining("'Y..z'");
  }

  @Test
  void theNamedExceptions_areKeptWithTheirReasons() {
    ModuleRules rules =
        ModuleRules.forRootPackage("dev.paramserver.bench")
            .alsoModule("../other", "dev.paramserver.other")
            .foreignPackage("dev.paramserver.trainer.training", "drives a package-private loop")
            .adapterOutsideAdapterPackages("dev.paramserver.bench.X", "kept beside its drain");
    assertThat(rules.modules())
        .extracting(ModuleRules.Module::rootPackage)
        .containsExactly("dev.paramserver.bench", "dev.paramserver.other");
    assertThat(rules.foreignPackages())
        .containsEntry("dev.paramserver.trainer.training", "drives a package-private loop");
    assertThat(rules.adapterClasses())
        .containsEntry("dev.paramserver.bench.X", "kept beside its drain");
  }
}
