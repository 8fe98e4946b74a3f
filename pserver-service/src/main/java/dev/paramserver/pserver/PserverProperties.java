package dev.paramserver.pserver;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Settings of a parameter server ({@code paramserver.pserver.*}).
 *
 * @param desired number of pservers of the job; written to etcd key {@code ps_desired} if that key
 *     is absent (a value already there wins), and the range {@code [0, desired)} of indexes claimed
 * @param checkpointDir directory of the checkpoint files (created if missing)
 * @param checkpointInterval time between checkpoints while serving; 0 disables the timer (a
 *     checkpoint is still written on graceful shutdown)
 * @param rejectNonFinite reject gradients holding NaN or Inf with NON_FINITE_GRADIENT; when false
 *     they are applied as they are
 * @param syncTimeout synchronous modes: the longest a push or pull waits for its step to complete
 *     before failing with SYNC_ABORTED (a dead trainer is dropped sooner, after its lease TTL)
 * @param registerTimeout how long one attempt to claim an index waits for a free one (an old
 *     holder's lease expiring) before trying again
 * @param blockingThreads threads that run calls which may wait (synchronous barriers), so they
 *     never block gRPC's threads
 * @param index the index ({@code ps/<index>}) this pserver tries to claim first, for example a
 *     StatefulSet pod's ordinal, so that a restarted pod gets its own shard and checkpoints back;
 *     when it is taken (or outside {@code [0, desired)}) the lowest free index is claimed instead.
 *     -1 (the default) claims the lowest free index. After a lost lease the pserver always tries
 *     the index it held first.
 */
@Validated
@ConfigurationProperties("paramserver.pserver")
public record PserverProperties(
    @DefaultValue("1") @Min(1) @Max(4096) int desired,
    @DefaultValue("./checkpoints") @NotNull Path checkpointDir,
    @DefaultValue("60s") @NotNull Duration checkpointInterval,
    @DefaultValue("true") boolean rejectNonFinite,
    @DefaultValue("60s") @NotNull Duration syncTimeout,
    @DefaultValue("30s") @NotNull Duration registerTimeout,
    @DefaultValue("64") @Min(1) @Max(4096) int blockingThreads,
    @DefaultValue("-1") @Min(-1) @Max(4095) int index) {}
