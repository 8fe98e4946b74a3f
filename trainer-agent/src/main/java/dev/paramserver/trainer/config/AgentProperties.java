package dev.paramserver.trainer.config;

import jakarta.validation.constraints.Min;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * The trainer process itself ({@code paramserver.trainer.*}, the keys below only).
 *
 * @param id this trainer's id, unique in the job (default: host name and process id)
 * @param seed seed of the parameter initialisation and of the shuffling (each task's records are
 *     shuffled before they are cut into mini-batches)
 * @param logEvery log progress every this many batches
 * @param exitWhenDone stop the process when the job is finished
 * @param exitLinger with {@code exit-when-done}: wait at most this long for Prometheus to take the
 *     final metrics (it exits at the first scrape of {@code /actuator/prometheus} after the job
 *     ended); the compose file sets 25 s
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record AgentProperties(
    String id,
    @DefaultValue("42") long seed,
    @DefaultValue("200") @Min(1) int logEvery,
    @DefaultValue("true") boolean exitWhenDone,
    @DefaultValue("0s") Duration exitLinger) {

  public AgentProperties {
    if (exitLinger.isNegative()) {
      throw new IllegalArgumentException(
          "paramserver.trainer.exit-linger must not be negative, got " + exitLinger);
    }
    if (id == null || id.isBlank()) {
      id = defaultId();
    }
  }

  private static String defaultId() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      host = "trainer";
    }
    return host + "-" + ProcessHandle.current().pid();
  }
}
