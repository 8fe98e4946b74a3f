package dev.paramserver.master;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class MasterArchitectureTest extends ModuleArchitectureTest {
  private static final String CONSOLE =
      "the console samples the pservers' and trainers' status over gRPC (ClusterProbe); a client"
          + " behind an interface is pending";

  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.master")
        .grpcPackage("dev.paramserver.master.console", CONSOLE)
        .grpcPackage(
            "dev.paramserver.master.placement",
            "PlacementPservers calls the pservers' SlotMoves and status services itself; a client"
                + " behind an interface is pending with issue 45 item 2");
  }
}
