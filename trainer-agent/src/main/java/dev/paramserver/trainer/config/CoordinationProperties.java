package dev.paramserver.trainer.config;

import dev.paramserver.rpc.Channels;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How the trainer coordinates with its job ({@code paramserver.trainer.coordination.*}).
 *
 * @param mode {@code etcd} (default): the trainer reaches etcd itself ({@code paramserver.etcd.*})
 *     to register, find the master and the pservers and take the job's locks; {@code master}: it
 *     asks the leading master's Coordination service for all of that and needs no etcd endpoints or
 *     credentials (set {@code masters})
 * @param masters mode {@code master}: the gRPC addresses of the job's masters ({@code
 *     host:port,host:port}); the trainer calls them in turn until one leads, then follows the
 *     leader a standby names
 * @param rejoinTimeout mode {@code etcd}: how long a trainer whose etcd lease was lost (etcd
 *     unreachable for the lease TTL, or the trainer paused past it) keeps trying to take a new
 *     lease and register again; lock calls wait for it meanwhile. Past it the trainer ends with
 *     "training failed" and exit code 1. A trainer that starts while etcd does not answer keeps
 *     trying to join for as long. At least 1s.
 */
@Validated
@ConfigurationProperties("paramserver.trainer.coordination")
public record CoordinationProperties(
    @DefaultValue("etcd") CoordinationMode mode,
    @DefaultValue List<String> masters,
    @DefaultValue("5m") Duration rejoinTimeout) {

  public CoordinationProperties {
    if (rejoinTimeout == null || rejoinTimeout.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new IllegalArgumentException(
          "paramserver.trainer.coordination.rejoin-timeout must be at least 1s, got "
              + rejoinTimeout);
    }
    masters = masters.stream().map(String::trim).filter(s -> !s.isEmpty()).toList();
    if (mode == CoordinationMode.MASTER && masters.isEmpty()) {
      throw new IllegalArgumentException(
          "paramserver.trainer.coordination.mode=master needs the masters' addresses: set"
              + " paramserver.trainer.coordination.masters=host:port[,host:port...]");
    }
    for (String m : masters) {
      try {
        Channels.HostPort.parse(m);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(
            "paramserver.trainer.coordination.masters: '"
                + m
                + "' is not host:port (for example 127.0.0.1:8081)");
      }
    }
  }
}
