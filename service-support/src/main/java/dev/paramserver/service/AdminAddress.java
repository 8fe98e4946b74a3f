package dev.paramserver.service;

import org.springframework.core.env.Environment;

/**
 * This process's HTTP address ({@code advertiseHost:port} of actuator, {@code /admin} and, on the
 * master, the console) as others should dial it: published through the services' status calls so
 * that tools which found a service through etcd (by its gRPC address) can reach its admin
 * endpoints.
 */
public final class AdminAddress {
  private final String host;
  private final Environment environment;

  public AdminAddress(String host, Environment environment) {
    this.host = host;
    this.environment = environment;
  }

  /** {@code host:port}, or "" while the web server has not started (or there is none). */
  public String get() {
    String port = environment.getProperty("local.server.port");
    return port == null || port.isEmpty() || "0".equals(port) ? "" : host + ":" + port;
  }
}
