package dev.paramserver.service;

import dev.paramserver.etcd.EtcdSettings;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotEmpty;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.hibernate.validator.constraints.time.DurationMax;
import org.hibernate.validator.constraints.time.DurationMin;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Settings every paramserver service shares, under {@code paramserver.*}. A value out of bounds
 * stops the service at startup with a message naming the property.
 *
 * @param job name of the training job; all of its etcd keys live under {@code /paramserver/<job>/},
 *     so several jobs can share one etcd. 1-63 letters, digits, '.', '_' or '-', starting with a
 *     letter or digit.
 * @param advertiseHost host name or IP address that other processes use to reach this one; it is
 *     what this service publishes in etcd (with its gRPC or HTTP port).
 * @param etcd how to reach etcd.
 * @param admin the REST admin endpoints under {@code /admin}.
 */
@Validated
@ConfigurationProperties("paramserver")
public record CommonProperties(
    @DefaultValue("default")
        @NotBlank
        @Pattern(
            regexp = "[A-Za-z0-9][A-Za-z0-9._-]{0,62}",
            message = "use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")
        String job,
    @DefaultValue("127.0.0.1") @NotBlank String advertiseHost,
    @DefaultValue @Valid @NotNull Etcd etcd,
    @DefaultValue @Valid @NotNull Admin admin) {

  /**
   * etcd connection settings, under {@code paramserver.etcd.*}.
   *
   * @param endpoints etcd client URLs, comma-separated ({@code http://host:2379}; {@code https://}
   *     with {@code ca-file}).
   * @param callTimeout the longest any single etcd call may take before it fails (and the service
   *     counts etcd as unreachable). At least 100ms, at most 5m.
   * @param leaseTtl time-to-live of this service's etcd lease: how long after this process dies or
   *     loses etcd its registrations (and leadership) vanish, and so how fast others take over. At
   *     least 2s (etcd's minimum), at most 10m.
   * @param startupTimeout how long startup waits for etcd to answer before it gives up and the
   *     service exits with an error; 0 starts without waiting (readiness then stays DOWN until etcd
   *     answers, and each role's own start-up decides what to do).
   * @param user etcd user name, when etcd has authentication enabled; empty for none.
   * @param password etcd password of {@code user}; never logged.
   * @param caFile PEM file of the CA that signed etcd's server certificate, for {@code https://}
   *     endpoints; empty for plain text.
   */
  public record Etcd(
      @DefaultValue("http://127.0.0.1:2379") @NotEmpty
          List<
                  @NotBlank
                  @Pattern(
                      regexp = "https?://\\S+",
                      message = "must be a URL like http://host:2379")
                  String>
              endpoints,
      @DefaultValue("5s") @NotNull @DurationMin(millis = 100) @DurationMax(minutes = 5)
          Duration callTimeout,
      @DefaultValue("10s") @NotNull @DurationMin(seconds = 2) @DurationMax(minutes = 10)
          Duration leaseTtl,
      @DefaultValue("60s") @NotNull @DurationMin(seconds = 0) @DurationMax(minutes = 30)
          Duration startupTimeout,
      String user,
      String password,
      Path caFile) {

    @Override
    public String toString() {
      return "Etcd[endpoints="
          + endpoints
          + ", callTimeout="
          + callTimeout
          + ", leaseTtl="
          + leaseTtl
          + ", startupTimeout="
          + startupTimeout
          + ", user="
          + user
          + ", password="
          + (password == null || password.isEmpty() ? "none" : "***")
          + ", caFile="
          + caFile
          + "]";
    }
  }

  /**
   * REST admin settings, under {@code paramserver.admin.*}.
   *
   * @param token bearer token required by every {@code /admin/**} request ({@code Authorization:
   *     Bearer <token>}); when empty, the admin endpoints answer 401 to everyone. It is also the
   *     job token: the pserver's internal gRPC services (replication, slot moves, the change stream
   *     serving replicas follow) refuse a call without it, and every service sends it on its gRPC
   *     calls (metadata {@code x-paramserver-token}).
   * @param exitJvmOnShutdown whether {@code POST /admin/shutdown} ends the JVM (with the
   *     application's exit code) after the graceful close; tests that run several services in one
   *     JVM set it to false.
   */
  public record Admin(String token, @DefaultValue("true") boolean exitJvmOnShutdown) {
    @Override
    public String toString() {
      return "Admin[token=" + (token == null || token.isEmpty() ? "none" : "***") + "]";
    }
  }

  /** The coordination settings these properties describe. */
  public EtcdSettings etcdSettings() {
    return new EtcdSettings(
        etcd.endpoints().stream().map(String::trim).toList(),
        job,
        etcd.callTimeout(),
        blankToNull(etcd.user()),
        blankToNull(etcd.password()),
        etcd.caFile());
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }
}
