package dev.paramserver.psctl;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class PsctlArchitectureTest extends ModuleArchitectureTest {
  private static final String SHARED_ROOT =
      "the commands use the root package's shared pieces (PsctlCommand, OutputFormat, ExitCodes)"
          + " while Psctl there registers them; moving the shared pieces to their own package is"
          + " pending (issue 45 item 6)";

  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.psctl")
        .cycleEdge("dev.paramserver.psctl.cluster", "dev.paramserver.psctl", SHARED_ROOT)
        .cycleEdge("dev.paramserver.psctl.convert", "dev.paramserver.psctl", SHARED_ROOT)
        .cycleEdge("dev.paramserver.psctl.demo", "dev.paramserver.psctl", SHARED_ROOT)
        .cycleEdge("dev.paramserver.psctl.inspect", "dev.paramserver.psctl", SHARED_ROOT)
        .cycleEdge("dev.paramserver.psctl.job", "dev.paramserver.psctl", SHARED_ROOT)
        .cycleEdge("dev.paramserver.psctl.model", "dev.paramserver.psctl", SHARED_ROOT)
        .cycleEdge("dev.paramserver.psctl.startup", "dev.paramserver.psctl", SHARED_ROOT)
        .grpcPackage(
            "dev.paramserver.psctl.job", "psctl's job commands are a gRPC client of the master");
  }
}
