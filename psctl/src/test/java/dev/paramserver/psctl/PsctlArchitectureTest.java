package dev.paramserver.psctl;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class PsctlArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.psctl")
        .grpcPackage(
            "dev.paramserver.psctl.job", "psctl's job commands are a gRPC client of the master");
  }
}
