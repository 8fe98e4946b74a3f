package dev.paramserver.errors;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;
import org.junit.jupiter.api.Test;

/** The shared rules for this module's main code, and no transport: domain modules link it. */
class ErrorsArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.errors");
  }

  @Test
  void errors_linkNeitherGrpcNorProtobuf() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("io.grpc..", "com.google.protobuf..", "com.google.rpc..")
        .because("pserver-core and optimizers throw these errors without linking gRPC")
        .check(mainClasses());
  }
}
