package dev.paramserver.pserver.replication;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.pserver.shard.ParameterShard;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Streams a staged copy of the shard to the backup ({@code Fill}) and waits for it installed. */
final class CopyUpload {
  private static final Logger log = LoggerFactory.getLogger(PrimaryReplicator.class);
  private static final int CHUNK = 1 << 20;

  private CopyUpload() {}

  /** A copy sent: its generation and size. */
  record Sent(long generation, long bytes) {
    /** Logs that the backup at {@code address} installed this copy, sent since {@code start}. */
    void logInstalled(int index, String address, long start) {
      log.info(
          "pserver {}: backup {} holds the shard (copy {}: {} bytes in {} ms)",
          index,
          address,
          generation,
          bytes,
          (System.nanoTime() - start) / 1_000_000);
    }
  }

  /**
   * Writes a copy of the shard to {@code file}, cut under the shard's write lock where {@code
   * atCut} runs and gives the copy's generation, then sends it with {@code header} (index, epoch
   * and backup lease set) and returns once the backup installed it. When the file cannot be written
   * (the disk is full or failing: the log's disk may be the one that fails next, and the backup is
   * what takes over then) the copy is cut again into memory, up to {@link #memoryCap()} bytes.
   */
  static Sent cutAndSend(
      ParameterShard shard,
      Path file,
      FillChunk.Builder header,
      ShardReplicationGrpc.ShardReplicationStub async,
      Duration timeout,
      ReplicationClock clock,
      LongSupplier atCut)
      throws IOException, InterruptedException {
    long[] generation = new long[1];
    boolean initialised;
    try {
      Files.createDirectories(file.getParent());
      try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), CHUNK)) {
        initialised = shard.writeCopy(out, () -> generation[0] = atCut.getAsLong());
      }
    } catch (IOException e) {
      deleteQuietly(file);
      log.warn(
          "pserver {}: the copy for the backup could not be staged in {} ({}): cutting it in"
              + " memory instead",
          header.getIndex(),
          file,
          e.toString());
      MemoryCopy copy = new MemoryCopy(memoryCap());
      initialised = shard.writeCopy(copy, () -> generation[0] = atCut.getAsLong());
      header.setGeneration(generation[0]).setInitialised(initialised);
      send(async, copy.input(), copy.size(), header, timeout, clock);
      return new Sent(generation[0], copy.size());
    }
    long bytes = Files.size(file);
    header.setGeneration(generation[0]).setInitialised(initialised);
    try (InputStream in = Files.newInputStream(file)) {
      send(async, in, bytes, header, timeout, clock);
    } finally {
      Files.deleteIfExists(file);
    }
    return new Sent(generation[0], bytes);
  }

  /** The largest copy held in memory when it cannot be staged on disk: an eighth of the heap. */
  static long memoryCap() {
    return Runtime.getRuntime().maxMemory() / 8;
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.debug("could not delete {}: {}", file, e.toString());
    }
  }

  /**
   * Sends {@code in} ({@code bytes} long) in chunks, {@code header} on the first, and returns once
   * the backup installed it.
   */
  static void send(
      ShardReplicationGrpc.ShardReplicationStub async,
      InputStream in,
      long bytes,
      FillChunk.Builder header,
      Duration timeout,
      ReplicationClock clock)
      throws IOException, InterruptedException {
    CompletableFuture<FillResponse> done = new CompletableFuture<>();
    StreamObserver<FillChunk> upload =
        async
            .withDeadline(
                clock.deadlineAfter(
                    TimeUnit.MILLISECONDS.toNanos(timeout.toMillis() + bytes / 50_000)))
            .fill(
                new StreamObserver<>() {
                  @Override
                  public void onNext(FillResponse value) {
                    done.complete(value);
                  }

                  @Override
                  public void onError(Throwable t) {
                    done.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {
                    done.complete(FillResponse.getDefaultInstance());
                  }
                });
    try {
      byte[] buf = new byte[CHUNK];
      boolean first = true;
      int n;
      while ((n = in.readNBytes(buf, 0, CHUNK)) > 0 || first) {
        FillChunk.Builder c = first ? header : FillChunk.newBuilder();
        upload.onNext(c.setData(ByteString.copyFrom(buf, 0, Math.max(n, 0))).build());
        first = false;
        if (n < CHUNK) {
          break;
        }
      }
      upload.onCompleted();
    } catch (IOException | RuntimeException e) {
      upload.onError(Status.CANCELLED.withDescription(e.toString()).asRuntimeException());
      throw e;
    }
    try {
      clock.get(done, TimeUnit.MILLISECONDS.toNanos(timeout.toMillis() + bytes / 50_000 + 1000));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException s) {
        throw s;
      }
      throw new IOException(e.getCause());
    } catch (TimeoutException e) {
      throw new IOException("the backup did not install the copy in time", e);
    }
  }
}
