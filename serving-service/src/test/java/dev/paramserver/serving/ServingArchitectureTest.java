package dev.paramserver.serving;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/**
 * The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}): the
 * served model and its followers ({@code serving.replica}) never import io.grpc; the gRPC service
 * and the change-stream client are adapters in {@code serving.grpc}.
 */
class ServingArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.serving");
  }
}
