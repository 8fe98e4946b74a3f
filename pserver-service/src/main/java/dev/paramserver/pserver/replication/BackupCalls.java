package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.springframework.stereotype.Component;

/**
 * The primary's calls to this pserver as its backup, without gRPC: the door of the ShardReplication
 * adapter ({@code pserver.grpc.ShardReplicationGrpcService}). Each call goes to this pserver's
 * {@link BackupReplica}; without one, a pserver that serves the shard itself (a backup that took it
 * over) refuses the sender as deposed (NOT_PRIMARY); any other answers SHUTTING_DOWN (UNAVAILABLE),
 * which the primary retries: a pserver that registered as the backup may be reached before it has
 * set its backup role up, and must not depose a live primary.
 */
@Component
public final class BackupCalls {
  private final Replication replication;

  public BackupCalls(Replication replication) {
    this.replication = replication;
  }

  /** Where copies from the primary are staged before they are installed. */
  public Path scratch() {
    return replication.scratch();
  }

  /**
   * Applies {@code request} at once when that does not wait (the copy it follows is installed);
   * null when it would wait: then {@link #replicate} on a thread that may block.
   */
  public ReplicateResponse replicateIfReady(ReplicateRequest request) {
    BackupReplica b = replication.backup();
    if (b == null || !b.ready(request)) {
      return null;
    }
    try {
      return b.replicate(request);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return ReplicateResponse.newBuilder().setNeedFill(true).build();
    }
  }

  /** Applies {@code request}, waiting for the copy it follows (a blocking thread's call). */
  public ReplicateResponse replicate(ReplicateRequest request) {
    try {
      return backup(request.getIndex()).replicate(request);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ServiceException(ErrorReason.SHUTTING_DOWN, "backup is stopping");
    }
  }

  /**
   * Installs the copy whose first chunk is {@code header}, staged in {@code file} (its bytes'
   * CRC-32 {@code crc}); the caller deletes the file afterwards.
   */
  public void install(FillChunk header, Path file, int crc) {
    try {
      backup(header.getIndex())
          .install(
              header.getEpoch(),
              header.getBackupLease(),
              header.getGeneration(),
              header.getInitialised() ? file : null,
              crc);
    } catch (IOException e) {
      throw new UncheckedIOException("installing the copy failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ServiceException(ErrorReason.SHUTTING_DOWN, "backup is stopping");
    }
  }

  private BackupReplica backup(int index) {
    BackupReplica b = replication.backup();
    if (b != null) {
      return b;
    }
    if (replication.serves(index)) {
      throw new ServiceException(
          ErrorReason.NOT_PRIMARY,
          "this pserver is the primary of shard " + index + ": the sender is no longer");
    }
    throw new ServiceException(
        ErrorReason.SHUTTING_DOWN,
        "this pserver is not (yet) a backup of shard " + index + ": retry shortly");
  }
}
