package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.Offload;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.grpc.server.service.GrpcService;

/**
 * The ShardReplication gRPC service of a backup: stages a copy of the primary's shard in a local
 * file and installs it, and applies the records that follow. Both may wait (for a copy, for the
 * shard's write lock), so they run on the blocking executor, never on a transport thread.
 */
@GrpcService
public final class ShardReplicationGrpcService
    extends ShardReplicationGrpc.ShardReplicationImplBase {
  private static final Logger log = LoggerFactory.getLogger(ShardReplicationGrpcService.class);

  private final Replication replication;
  private final Executor blockingExecutor;
  private final Path scratch;

  public ShardReplicationGrpcService(
      Replication replication, @Qualifier("pserverBlockingExecutor") Executor blockingExecutor) {
    this.replication = replication;
    this.blockingExecutor = blockingExecutor;
    this.scratch = replication.scratch();
  }

  /**
   * This pserver's backup role. Without one, a pserver that serves shard {@code index} itself (a
   * backup that took it over) refuses the sender as deposed (NOT_PRIMARY); any other answers
   * UNAVAILABLE, which the primary retries: a pserver that registered as the backup may be reached
   * before it has set its backup role up, and must not depose a live primary.
   */
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

  @Override
  public void replicate(ReplicateRequest request, StreamObserver<ReplicateResponse> out) {
    BackupReplica b = replication.backup();
    if (b != null && b.ready(request)) {
      // the copy it follows is installed: applying it does not wait, so no thread hop
      ReplicateResponse r;
      try {
        r = b.replicate(request);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        r = ReplicateResponse.newBuilder().setNeedFill(true).build();
      } catch (RuntimeException e) {
        out.onError(
            ErrorMappingInterceptor.map(ShardReplicationGrpc.SERVICE_NAME + "/Replicate", e));
        return;
      }
      out.onNext(r);
      out.onCompleted();
      return;
    }
    run(
        "Replicate",
        out,
        () -> {
          try {
            return backup(request.getIndex()).replicate(request);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ServiceException(ErrorReason.SHUTTING_DOWN, "backup is stopping");
          }
        });
  }

  @Override
  public StreamObserver<FillChunk> fill(StreamObserver<FillResponse> out) {
    return new StreamObserver<>() {
      private FillChunk header;
      private Path file;
      private OutputStream stream;
      private final CRC32 crc = new CRC32();
      private boolean failed;

      @Override
      public void onNext(FillChunk chunk) {
        if (failed) {
          return;
        }
        try {
          if (header == null) {
            header = chunk;
            Files.createDirectories(scratch);
            file = Files.createTempFile(scratch, "replica-fill-" + chunk.getIndex() + "-", ".tmp");
            stream = Files.newOutputStream(file);
          }
          chunk.getData().writeTo(stream);
          crc.update(chunk.getData().asReadOnlyByteBuffer());
        } catch (IOException e) {
          failed = true;
          cleanup();
          out.onError(
              ErrorMappingInterceptor.map(
                  ShardReplicationGrpc.SERVICE_NAME + "/Fill",
                  new UncheckedIOException("staging the copy failed", e)));
        }
      }

      @Override
      public void onError(Throwable t) {
        log.debug("copy from the primary ended: {}", t.toString());
        cleanup();
      }

      @Override
      public void onCompleted() {
        if (failed) {
          return;
        }
        if (header == null) {
          out.onError(
              ErrorMappingInterceptor.map(
                  ShardReplicationGrpc.SERVICE_NAME + "/Fill",
                  new ServiceException(ErrorReason.BAD_ARGUMENT, "a copy with no chunk")));
          return;
        }
        FillChunk h = header;
        run(
            "Fill",
            out,
            () -> {
              try {
                stream.close();
                backup(h.getIndex())
                    .install(
                        h.getEpoch(),
                        h.getBackupLease(),
                        h.getGeneration(),
                        h.getInitialised() ? file : null,
                        (int) crc.getValue());
                return FillResponse.getDefaultInstance();
              } catch (IOException e) {
                throw new UncheckedIOException("installing the copy failed", e);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ServiceException(ErrorReason.SHUTTING_DOWN, "backup is stopping");
              } finally {
                cleanup();
              }
            });
      }

      private void cleanup() {
        try {
          if (stream != null) {
            stream.close();
          }
          if (file != null) {
            Files.deleteIfExists(file);
          }
        } catch (IOException e) {
          log.debug("removing the staged copy failed: {}", e.toString());
        }
      }
    };
  }

  private <T> void run(String method, StreamObserver<T> out, Supplier<T> work) {
    Offload.run(blockingExecutor, ShardReplicationGrpc.SERVICE_NAME + "/" + method, out, work);
  }
}
