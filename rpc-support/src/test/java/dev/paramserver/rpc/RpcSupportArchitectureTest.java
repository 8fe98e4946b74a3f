package dev.paramserver.rpc;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class RpcSupportArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.rpc")
        .grpcPackage(
            "dev.paramserver.rpc",
            "the gRPC transport library itself: channels, marshallers, deadlines, error mapping");
  }
}
