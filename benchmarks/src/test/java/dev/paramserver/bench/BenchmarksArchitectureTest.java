package dev.paramserver.bench;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class BenchmarksArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.bench")
        .grpcPackage("dev.paramserver.bench.wire", "measures the wire: gRPC and its marshallers")
        .grpcPackage("dev.paramserver.bench.component", "measures components over in-process gRPC")
        .grpcPackage(
            "dev.paramserver.bench.cluster", "measures a real cluster through its gRPC API")
        .grpcPackage(
            "dev.paramserver.bench.serving",
            "measures a serving replica process through its gRPC API, open loop");
  }
}
