package dev.paramserver.trainer;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class TrainerArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.trainer")
        .longFile(
            "dev/paramserver/trainer/pserver/ParameterClient.java",
            "split pending: the trainer's data path is being changed on another branch (issue 45)")
        .grpcPackage("dev.paramserver.trainer.pserver", "the trainer's client of the pservers")
        .grpcPackage("dev.paramserver.trainer.master", "the trainer's client of the master")
        .grpcPackage(
            "dev.paramserver.trainer.coordination",
            "the trainer's membership and leases go through the master's coordination service");
  }
}
