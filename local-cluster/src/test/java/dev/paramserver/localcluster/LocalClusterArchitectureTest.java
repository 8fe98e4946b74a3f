package dev.paramserver.localcluster;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class LocalClusterArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.localcluster")
        .longFile(
            "dev/paramserver/localcluster/RunOptions.java",
            "run-local's options and their checks in one record (a user contract); a split by"
                + " option group is pending (issue 45)")
        .longFile(
            "dev/paramserver/localcluster/LocalCluster.java",
            "starts and stops the whole cluster; a split of the start-up order from the run is"
                + " pending (issue 45)");
  }
}
