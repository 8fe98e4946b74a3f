package dev.paramserver.etcd;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class CoordinationArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.etcd");
  }
}
