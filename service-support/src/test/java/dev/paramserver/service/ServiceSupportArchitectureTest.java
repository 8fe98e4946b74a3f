package dev.paramserver.service;

import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;

/** The shared rules for this module's main code (test-support's {@link ModuleArchitectureTest}). */
class ServiceSupportArchitectureTest extends ModuleArchitectureTest {
  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.service")
        .grpcPackage(
            "dev.paramserver.service",
            "the services' shared gRPC server set-up: interceptors, TLS, channel factory, health")
        .adapterOutsideAdapterPackages(
            "dev.paramserver.service.AdminController",
            "the admin endpoints every service shares: the auto-configuration in the root package"
                + " builds it over the root's AdminStatusSource and AdminShutdown, so a web package"
                + " would form a cycle with the root");
  }
}
