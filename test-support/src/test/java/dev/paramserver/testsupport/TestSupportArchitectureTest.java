package dev.paramserver.testsupport;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class TestSupportArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.testsupport")
        .alsoModule("../process-launcher", "dev.paramserver.launcher");
  }
}
