package dev.paramserver.optimizers;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;
import org.junit.jupiter.api.Test;

/**
 * The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}), and
 * no transport: the update rules are plain Java (the POM's Enforcer rule bans gRPC as a
 * dependency).
 */
class OptimizersArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.optimizers");
  }

  @Test
  void optimizers_linkNoGrpc() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("io.grpc..", "io.netty..", "dev.paramserver.rpc..")
        .because("errors are the errors module's ServiceException; gRPC is the services' business")
        .check(mainClasses());
  }
}
