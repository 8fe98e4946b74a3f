package dev.paramserver.pserver.placement;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.MoveInChunk;
import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.replication.ReplicationClock;
import dev.paramserver.pserver.shard.MoveCounts;
import dev.paramserver.pserver.shard.MovingSlots;
import dev.paramserver.pserver.shard.RecordTap;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One MoveOut on the old owner: cuts the copy of the moving slots and blocks under the shard's
 * write lock, streams it to the new owner's MoveIn, then every record applied after the cut that
 * touches them (filtered to them, in the log's order); freezes them (MOVED), waits for the pushes
 * being applied, sends their records and {@code caught_up}, and answers once the new owner holds
 * everything durably. Any failure after the freeze rolls the move back (fenced) so that the slots
 * are served here again; after the answer, {@code move-timeout} without a commit does the same.
 *
 * <p>One object is one attempt of the move ({@code SlotMove.attempt}): its own tap, records and
 * MoveIn call. A newer attempt {@link #cancel cancels} it and waits for it to {@link #ended end}
 * before it starts, so two attempts never interleave; an attempt detaches only its own tap.
 */
final class OutgoingMove {
  private static final Logger log = LoggerFactory.getLogger(OutgoingMove.class);
  private static final int CHUNK_BYTES = 1 << 20;

  private final ShardMoves shard;
  private final PlacementFollower follower;
  private final MoveMetrics metrics;
  private final Duration timeout;
  private final MovingSlots moving;
  private final ChannelFactory channels;
  private final ReplicationClock clock;
  private final ConcurrentLinkedQueue<WalRecord> records = new ConcurrentLinkedQueue<>();
  private final RecordTap tap;
  // the new owner's answer; completed exceptionally by the new owner's error or by cancel()
  private final CompletableFuture<MoveInResponse> answer = new CompletableFuture<>();
  private final CompletableFuture<Void> ended = new CompletableFuture<>();
  private volatile String cancelled;
  private long bytes;
  private long sent;
  // notified when the MoveIn stream takes more data, or ends
  private final Object ready = new Object();

  OutgoingMove(
      ShardMoves shard,
      PlacementFollower follower,
      MoveMetrics metrics,
      Duration timeout,
      SlotMove move,
      ChannelFactory channels,
      ReplicationClock clock) {
    this.shard = shard;
    this.follower = follower;
    this.metrics = metrics;
    this.timeout = timeout;
    this.moving = new MovingSlots(move);
    this.channels = channels;
    this.clock = clock;
    int index = moving.from();
    this.tap =
        record -> {
          WalRecord kept = ShardMoves.forwarded(record, moving, index);
          if (kept != null) {
            records.add(kept);
          }
        };
  }

  MovingSlots moving() {
    return moving;
  }

  /**
   * Stops this attempt (a newer one of the move, or of another, is admitted): its waits end, it
   * rolls back what it froze and detaches its tap; see {@link #ended}.
   */
  void cancel(String why) {
    cancelled = why;
    answer.completeExceptionally(
        Status.CANCELLED.withDescription(moving + " was cancelled: " + why).asRuntimeException());
    synchronized (ready) {
      ready.notifyAll();
    }
  }

  /** Completes once this attempt is over: {@link #run} returned or threw, or it will never run. */
  CompletableFuture<Void> ended() {
    return ended;
  }

  private void checkCancelled() {
    String why = cancelled;
    if (why != null) {
      throw Status.CANCELLED
          .withDescription(moving + " was cancelled: " + why)
          .asRuntimeException();
    }
  }

  /**
   * Sends {@code chunk} once the stream takes more (gRPC's flow control: the copy is not queued in
   * memory faster than the new owner reads it), failing when it takes nothing for {@code timeout}
   * or the new owner already answered (an error).
   */
  private void send(StreamObserver<MoveInChunk> to, CompletableFuture<?> answer, MoveInChunk chunk)
      throws InterruptedException, ExecutionException {
    ClientCallStreamObserver<MoveInChunk> call = (ClientCallStreamObserver<MoveInChunk>) to;
    long deadline = clock.nanoTime() + timeout.toNanos();
    synchronized (ready) {
      while (!call.isReady() && !answer.isDone()) {
        long left = deadline - clock.nanoTime();
        if (left <= 0) {
          throw new IllegalStateException(
              "pserver " + moving.to() + " took no data for " + timeout + " (MoveIn)");
        }
        clock.timedWait(ready, Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
      }
    }
    if (answer.isCompletedExceptionally()) {
      answer.get(); // throws the new owner's error
    }
    to.onNext(chunk);
  }

  /** Runs this attempt, to the new owner at {@code address}. */
  MoveOutResponse run(String address) {
    try {
      checkCancelled();
      return attempt(address);
    } finally {
      ended.complete(null);
    }
  }

  /**
   * Waits (at most the move timeout) until the new owner has installed the copy, so that the
   * install is not inside the stall (the records applied meanwhile are queued). Any failure (a new
   * owner without {@code AwaitCopyInstalled}, its MoveIn failed, the time limit) ends the wait: the
   * freeze follows, and MoveIn's answer tells whether the move went through.
   */
  private void awaitCopyInstalled(ManagedChannel channel) throws InterruptedException {
    CompletableFuture<MoveInResponse> installed = new CompletableFuture<>();
    SlotMovesGrpc.newStub(channel)
        .withDeadline(clock.deadlineAfter(timeout.toNanos()))
        .awaitCopyInstalled(
            moving.move(),
            new StreamObserver<>() {
              @Override
              public void onNext(MoveInResponse value) {
                installed.complete(value);
              }

              @Override
              public void onError(Throwable t) {
                installed.completeExceptionally(t);
              }

              @Override
              public void onCompleted() {
                installed.completeExceptionally(
                    new IllegalStateException("AwaitCopyInstalled ended without an answer"));
              }
            });
    try {
      clock.get(installed, timeout.toNanos());
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      log.debug("{}: not waiting for the new owner's install ({})", moving, cause.toString());
    }
  }

  private MoveOutResponse attempt(String address) {
    ManagedChannel channel = channels.forAddress(address);
    StreamObserver<MoveInChunk> to =
        SlotMovesGrpc.newStub(channel)
            .withDeadline(
                clock.deadlineAfter(
                    TimeUnit.MILLISECONDS.toNanos(Math.max(60_000, timeout.toMillis() * 6))))
            .moveIn(
                new ClientResponseObserver<MoveInChunk, MoveInResponse>() {
                  @Override
                  public void beforeStart(ClientCallStreamObserver<MoveInChunk> stream) {
                    stream.setOnReadyHandler(
                        () -> {
                          synchronized (ready) {
                            ready.notifyAll();
                          }
                        });
                  }

                  @Override
                  public void onNext(MoveInResponse value) {
                    answer.complete(value);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answer.completeExceptionally(t);
                    synchronized (ready) {
                      ready.notifyAll();
                    }
                  }

                  @Override
                  public void onCompleted() {
                    answer.completeExceptionally(
                        new IllegalStateException("MoveIn ended without an answer"));
                  }
                });
    boolean frozen = false;
    try {
      long cut = System.nanoTime();
      MoveCounts counts = sendCopy(to);
      send(to, answer, MoveInChunk.newBuilder().setCopyDone(true).build());
      sendRecords(to, answer);
      // the records applied meanwhile go after the freeze, with the rest: a MoveIn that failed
      // during the wait is then found frozen, and this owner rolls the move back itself
      awaitCopyInstalled(channel);
      long copyMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut);
      long freezeAt = System.nanoTime();
      checkCancelled();
      follower.freeze(moving);
      frozen = true;
      // every push that passed its ownership check before the freeze is applied (and its record
      // queued) once this returns; later ones are refused
      shard.awaitApplies();
      shard.detachTap(tap);
      sendRecords(to, answer);
      send(to, answer, MoveInChunk.newBuilder().setCaughtUp(true).setRecordsSent(sent).build());
      to.onCompleted();
      MoveInResponse in = clock.get(answer, timeout.toNanos());
      long stallMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - freezeAt);
      metrics.bytes("out", bytes);
      metrics.stalled(stallMs);
      follower.rollBackAfter(moving, timeout);
      log.info(
          "{}: sent {} rows, {} blocks, {} records ({} bytes) to pserver {}; copy {} ms, stall {}"
              + " ms; the new owner holds {} rows",
          moving,
          counts.rows(),
          counts.blocks(),
          sent,
          bytes,
          moving.to(),
          copyMs,
          stallMs,
          in.getRows());
      return MoveOutResponse.newBuilder()
          .setBytes(bytes)
          .setRecords(sent)
          .setRows(counts.rows())
          .setBlocks(counts.blocks())
          .setCopyMs(copyMs)
          .setStallMs(stallMs)
          .build();
    } catch (IOException | ExecutionException | TimeoutException | RuntimeException e) {
      shard.detachTap(tap);
      Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      to.onError(Status.CANCELLED.withDescription("move failed").asRuntimeException());
      String why = "MoveIn to pserver " + moving.to() + " failed: " + cause;
      if (frozen) {
        follower.rollBack(moving, why);
      }
      if (cause instanceof StatusRuntimeException sre
          && sre.getStatus().getCode() == Status.Code.FAILED_PRECONDITION) {
        throw MoveRequests.refused(
            moving + ": the new owner refused it: " + sre.getStatus().getDescription());
      }
      throw Status.UNAVAILABLE
          .withDescription(moving + " failed and was rolled back: " + why)
          .asRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      shard.detachTap(tap);
      to.onError(Status.CANCELLED.withDescription("move interrupted").asRuntimeException());
      if (frozen) {
        follower.rollBack(moving, "interrupted");
      }
      throw Status.UNAVAILABLE.withDescription("pserver is stopping").asRuntimeException();
    } finally {
      Channels.close(channel);
    }
  }

  /**
   * Cuts the copy into a temporary file (under the shard's write lock: a local write, never the
   * network) and streams it from there in chunks of {@value #CHUNK_BYTES} bytes as the new owner
   * takes them: the copy is never held in memory whole. The stream's first chunk, the move with the
   * copy's size, goes out between the cut and the copy.
   */
  private MoveCounts sendCopy(StreamObserver<MoveInChunk> to)
      throws IOException, InterruptedException, ExecutionException {
    Path file = Files.createTempFile("paramserver-move-", ".copy");
    try {
      MoveCounts counts;
      try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
        counts = shard.writeCopy(moving, out, () -> shard.attachTap(tap));
      }
      // the move first, with the copy's size: the new owner installs only a whole copy
      send(
          to,
          answer,
          MoveInChunk.newBuilder().setMove(moving.move()).setCopyBytes(Files.size(file)).build());
      try (InputStream in = Files.newInputStream(file)) {
        byte[] chunk = new byte[CHUNK_BYTES];
        for (int n = in.readNBytes(chunk, 0, CHUNK_BYTES);
            n > 0;
            n = in.readNBytes(chunk, 0, CHUNK_BYTES)) {
          send(
              to,
              answer,
              MoveInChunk.newBuilder().setCopy(ByteString.copyFrom(chunk, 0, n)).build());
          bytes += n;
        }
      }
      return counts;
    } finally {
      Files.deleteIfExists(file);
    }
  }

  private void sendRecords(StreamObserver<MoveInChunk> to, CompletableFuture<?> answer)
      throws InterruptedException, ExecutionException {
    for (WalRecord r = records.poll(); r != null; r = records.poll()) {
      send(to, answer, MoveInChunk.newBuilder().setRecord(r).build());
      bytes += r.getSerializedSize();
      sent++;
    }
  }
}
