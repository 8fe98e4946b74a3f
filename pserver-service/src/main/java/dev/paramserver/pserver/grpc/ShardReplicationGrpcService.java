package dev.paramserver.pserver.grpc;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.pserver.replication.BackupCalls;
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
 * file and has {@link BackupCalls} install it, and applies the records that follow. Both may wait
 * (for a copy, for the shard's write lock), so they run on the blocking executor, never on a
 * transport thread.
 */
@GrpcService
public final class ShardReplicationGrpcService
    extends ShardReplicationGrpc.ShardReplicationImplBase {
  private static final Logger log = LoggerFactory.getLogger(ShardReplicationGrpcService.class);

  private final BackupCalls backup;
  private final Executor blockingExecutor;
  private final Path scratch;

  public ShardReplicationGrpcService(
      BackupCalls backup, @Qualifier("pserverBlockingExecutor") Executor blockingExecutor) {
    this.backup = backup;
    this.blockingExecutor = blockingExecutor;
    this.scratch = backup.scratch();
  }

  @Override
  public void replicate(ReplicateRequest request, StreamObserver<ReplicateResponse> out) {
    ReplicateResponse r;
    try {
      // applied at once when the copy it follows is installed: no thread hop
      r = backup.replicateIfReady(request);
    } catch (RuntimeException e) {
      out.onError(ErrorMappingInterceptor.map(ShardReplicationGrpc.SERVICE_NAME + "/Replicate", e));
      return;
    }
    if (r != null) {
      out.onNext(r);
      out.onCompleted();
      return;
    }
    run("Replicate", out, () -> backup.replicate(request));
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
                backup.install(h, file, (int) crc.getValue());
                return FillResponse.getDefaultInstance();
              } catch (IOException e) {
                throw new UncheckedIOException("staging the copy failed", e);
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
