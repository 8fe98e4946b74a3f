package dev.paramserver.pserver.admin;

import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.wal.WriteAheadLog;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * Health contributor "log", part of the liveness group: DOWN once this pserver's write-ahead log
 * failed (a write or an fsync), with the failure; UP while it works or when there is none. A
 * pserver whose log failed acknowledges nothing and takes no place until restarted, so its liveness
 * probe fails and the orchestrator restarts it (on the same disk: the log it replays is what its
 * shard may wait for).
 */
@Component("log")
public final class LogHealthIndicator implements HealthIndicator {
  private final ObjectProvider<CheckpointService> checkpoints;

  public LogHealthIndicator(ObjectProvider<CheckpointService> checkpoints) {
    this.checkpoints = checkpoints;
  }

  @Override
  public Health health() {
    CheckpointService c = checkpoints.getIfAvailable();
    WriteAheadLog wal = c == null ? null : c.wal();
    if (wal == null) {
      return Health.up().withDetail("log", "off").build();
    }
    String failure = wal.failure();
    if (failure != null) {
      return Health.down()
          .withDetail("failure", failure)
          .withDetail(
              "action", "restart this pserver once its disk is repaired: it replays its log")
          .build();
    }
    return Health.up().withDetail("dir", wal.dir().toString()).build();
  }
}
