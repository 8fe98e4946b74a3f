package dev.paramserver.trainer.training;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.Lease;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ApplicationContext;
import org.springframework.stereotype.Component;

/**
 * Registers this trainer under {@code trainers/<id>} with its admin address ({@code
 * host:httpPort}), under a lease of its own that ends with the process.
 */
@Component
public class TrainerRegistration {
  private static final Logger log = LoggerFactory.getLogger(TrainerRegistration.class);

  private final Coordinator coordinator;
  private final ApplicationContext context;
  private final Duration leaseTtl;
  private final String advertiseHost;

  public TrainerRegistration(
      Coordinator coordinator,
      ApplicationContext context,
      @Value("${paramserver.etcd.lease-ttl:10s}") Duration leaseTtl,
      @Value("${paramserver.advertise-host:127.0.0.1}") String advertiseHost) {
    this.coordinator = coordinator;
    this.context = context;
    this.leaseTtl = leaseTtl;
    this.advertiseHost = advertiseHost;
  }

  /** The address published: the advertised host and the HTTP port (0 without a web server). */
  String endpoint() {
    int port =
        context instanceof WebServerApplicationContext web && web.getWebServer() != null
            ? web.getWebServer().getPort()
            : 0;
    return advertiseHost + ":" + port;
  }

  /** Grants a lease and registers {@code trainerId} under it; the caller closes the lease. */
  Lease register(String trainerId) {
    Lease lease = coordinator.grantLease(leaseTtl);
    try {
      coordinator
          .kv()
          .put(
              coordinator.keys().trainer(trainerId),
              endpoint().getBytes(StandardCharsets.UTF_8),
              lease);
    } catch (RuntimeException e) {
      lease.close();
      throw e;
    }
    lease.onLost(
        () -> log.error("trainer lease lost: etcd unreachable for longer than {}", leaseTtl));
    return lease;
  }
}
