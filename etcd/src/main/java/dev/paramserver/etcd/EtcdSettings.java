package dev.paramserver.etcd;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * How to reach etcd.
 *
 * @param endpoints client URLs, for example {@code http://127.0.0.1:2379}
 * @param job the job name; keys live under {@code /paramserver/<job>/}
 * @param callTimeout the timeout of every single etcd call
 * @param user etcd user name, or null
 * @param password etcd password, or null (never logged)
 * @param caFile PEM file of the CA that signed etcd's certificate (TLS), or null
 */
public record EtcdSettings(
    List<String> endpoints,
    String job,
    Duration callTimeout,
    String user,
    String password,
    Path caFile) {

  public EtcdSettings {
    if (endpoints == null || endpoints.isEmpty()) {
      throw new IllegalArgumentException("etcd endpoints are empty: give at least one client URL");
    }
    if (callTimeout == null || callTimeout.isNegative() || callTimeout.isZero()) {
      throw new IllegalArgumentException("etcd call timeout must be positive, got " + callTimeout);
    }
  }

  public static EtcdSettings of(String endpoints, String job) {
    return new EtcdSettings(
        List.of(endpoints.split(",")), job, Duration.ofSeconds(5), null, null, null);
  }

  @Override
  public String toString() {
    return "EtcdSettings[endpoints="
        + endpoints
        + ", job="
        + job
        + ", callTimeout="
        + callTimeout
        + ", user="
        + user
        + ", password="
        + (password == null ? "none" : "***")
        + ", caFile="
        + caFile
        + "]";
  }
}
