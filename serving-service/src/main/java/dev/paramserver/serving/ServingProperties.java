package dev.paramserver.serving;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import org.hibernate.validator.constraints.time.DurationMin;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Settings of a serving replica ({@code paramserver.serving.*}).
 *
 * @param maxIds the most ids one Lookup may name (more: TOO_LARGE)
 * @param maxExamples the most examples one Predict may carry (more: TOO_LARGE)
 * @param minVersionWait how long a request whose {@code min_version} is not reached yet waits for
 *     it before VERSION_NOT_REACHED, when the request names no wait of its own
 * @param shardsTimeout how long the replica waits at start for the job's shard count ({@code
 *     ps_desired} in etcd) before it fails to start
 * @param followBackoff the first pause before following a shard again after its stream ended
 * @param followBackoffMax the longest such pause
 * @param followStreamMax the deadline of one change stream: when it passes the replica follows
 *     again from where it was (no copy)
 * @param model a saved model file (as psctl and run-local write it; a path or {@code
 *     s3://bucket/key}) to serve instead of following a job: the replica then needs no etcd and no
 *     pserver; empty: follow the job {@code paramserver.job}, starting from its newest complete
 *     job-wide checkpoint
 * @param readThreads threads answering the reads that may wait (a {@code min_version} not reached
 *     yet, no copy yet) and pulls; a lookup of a version served already is answered on gRPC's
 *     transport thread
 * @param registrationInterval how often a replica that follows a job rebuilds its registration in
 *     etcd ({@code serving/<id>}: address, version, lag) and writes it when it changed: at most one
 *     write per interval
 */
@Validated
@ConfigurationProperties("paramserver.serving")
public record ServingProperties(
    @DefaultValue("10000") @Min(1) @Max(1_000_000) int maxIds,
    @DefaultValue("4096") @Min(1) @Max(1_000_000) int maxExamples,
    @DefaultValue("2s") @NotNull Duration minVersionWait,
    @DefaultValue("5m") @NotNull Duration shardsTimeout,
    @DefaultValue("100ms") @NotNull Duration followBackoff,
    @DefaultValue("2s") @NotNull Duration followBackoffMax,
    @DefaultValue("10m") @NotNull Duration followStreamMax,
    @DefaultValue("") @NotNull String model,
    @DefaultValue("16") @Min(1) @Max(1024) int readThreads,
    @DefaultValue("1s") @NotNull @DurationMin(millis = 100) Duration registrationInterval) {

  /** True when the replica serves a model file rather than following a job. */
  public boolean servesModelFile() {
    return !model.isBlank();
  }
}
