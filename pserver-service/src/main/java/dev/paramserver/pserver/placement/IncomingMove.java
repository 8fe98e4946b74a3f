package dev.paramserver.pserver.placement;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.MoveInChunk;
import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.shard.MoveCounts;
import dev.paramserver.pserver.shard.MovingSlots;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;

/**
 * One MoveIn on the new owner: takes the move (its slots now wait for the commit here), the copy
 * (installed once whole, at {@code copy_done}), then the records, applied in order by the replay
 * path; at {@code caught_up} makes everything durable and answers. Durable means one record of this
 * pserver's write-ahead log holding the copy and the forwarded records (a restart replays it:
 * {@code WalRecord.moved_in}), written and synced as pushes are; without a log, a checkpoint. A
 * stream that fails before that drops what it staged.
 */
final class IncomingMove implements StreamObserver<MoveInChunk> {
  private static final Logger log = LoggerFactory.getLogger(IncomingMove.class);

  private final ShardMoves moves;
  private final PlacementFollower follower;
  private final MoveMetrics metrics;
  private final ObjectProvider<ShardPersistence> persistence;
  private final Executor blocking;
  private final CopyInstalls installs;
  private final StreamObserver<MoveInResponse> out;
  private final ByteString.Output copy = ByteString.newOutput();
  private ByteString copyBytes;
  private final List<WalRecord> forwarded = new ArrayList<>();
  private MovingSlots moving;
  // the pserver's serving term when the move was taken in: answered only in the same term
  private long term;
  private MoveCounts installed;
  // the move the first chunk names, refused or taken (moving): its AwaitCopyInstalled fails with it
  private SlotMove named;
  // the copy's size the old owner declared (-1: an older sender, not checked)
  private long expectedCopyBytes = -1;
  private long bytes;
  private long records;
  private boolean done;
  // the chunks' handling, in order (see onNext); guarded by order, never held while handling
  private final Object order = new Object();
  private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);

  IncomingMove(
      ShardMoves moves,
      PlacementFollower follower,
      MoveMetrics metrics,
      ObjectProvider<ShardPersistence> persistence,
      Executor blocking,
      CopyInstalls installs,
      StreamObserver<MoveInResponse> out) {
    this.moves = moves;
    this.follower = follower;
    this.metrics = metrics;
    this.persistence = persistence;
    this.blocking = blocking;
    this.installs = installs;
    this.out = out;
  }

  /**
   * Handles the chunks in order on the blocking executor, one after the other: taking the move
   * reads etcd and installing the copy takes the shard's write lock, neither of which may hold a
   * transport thread.
   */
  @Override
  public void onNext(MoveInChunk chunk) {
    synchronized (order) {
      tail = tail.thenRunAsync(() -> handle(chunk), blocking);
    }
  }

  private synchronized void handle(MoveInChunk chunk) {
    if (done) {
      return;
    }
    try {
      bytes += chunk.getSerializedSize();
      if (chunk.hasMove()) {
        named = chunk.getMove();
        begin(named);
        expectedCopyBytes = chunk.hasCopyBytes() ? chunk.getCopyBytes() : -1;
      }
      if (moving == null) {
        throw MoveRequests.refused("MoveIn must name its move in its first chunk");
      }
      if (!chunk.getCopy().isEmpty()) {
        chunk.getCopy().writeTo(copy);
      }
      if (chunk.getCopyDone() || chunk.hasRecord() || chunk.getCaughtUp()) {
        // only while this stream is the attempt this pserver takes in: a newer one supersedes it
        follower.whileIncoming(moving, () -> apply(chunk));
      }
    } catch (IOException e) {
      fail(new UncheckedIOException(e));
    } catch (RuntimeException e) {
      fail(e);
    }
  }

  private void apply(MoveInChunk chunk) {
    install();
    if (chunk.hasRecord()) {
      if (moves.applyForwarded(chunk.getRecord())) {
        forwarded.add(chunk.getRecord());
      }
      records++;
    }
    if (chunk.getCaughtUp()) {
      if (chunk.hasRecordsSent() && chunk.getRecordsSent() != records) {
        throw MoveRequests.refused(
            moving
                + ": took in "
                + records
                + " records of the "
                + chunk.getRecordsSent()
                + " the old owner sent: not taken in");
      }
      done = true;
      finish();
    }
  }

  private void begin(SlotMove move) {
    int index = follower.index();
    if (index != move.getTo()) {
      throw MoveRequests.refused(
          "move " + move.getId() + " moves slots to pserver " + move.getTo() + ", not " + index);
    }
    term = follower.term();
    if (!follower.servesIn(term)) {
      throw MoveRequests.refused(
          "pserver " + index + " is not serving (claiming its index or loading its state)");
    }
    PlacementStore.Read read = follower.refresh();
    if (read.move().isEmpty() || !read.move().get().equals(move)) {
      throw MoveRequests.refused("move " + move.getId() + " is not the move in progress in etcd");
    }
    MovingSlots m = new MovingSlots(move);
    if (!follower.expect(m)) {
      throw MoveRequests.refused("pserver " + index + " is still taking in " + follower.incoming());
    }
    moving = m;
  }

  private void install() {
    if (installed == null) {
      if (expectedCopyBytes >= 0 && copy.size() != expectedCopyBytes) {
        throw MoveRequests.refused(
            moving
                + ": holds "
                + copy.size()
                + " bytes of the copy, the old owner sent "
                + expectedCopyBytes
                + ": not installed");
      }
      copyBytes = copy.toByteString();
      ShardCheckpoint c;
      try {
        c = ShardCheckpoint.parseFrom(copyBytes);
      } catch (InvalidProtocolBufferException e) {
        throw MoveRequests.refused(moving + ": its copy does not parse: " + e.getMessage());
      }
      boolean fresh = !moves.initialised();
      installed = moves.install(c, moving);
      if (fresh && moves.logged()) {
        // The copy initialised this shard: its log has no checkpoint to be replayed onto (a
        // restart without one starts afresh and discards the log), so the first one is written now,
        // before the records; it holds the copy and nothing else. Later moves in need none.
        ShardPersistence p = persistence.getIfAvailable();
        if (p != null) {
          p.checkpoint();
        }
      }
      installs.installed(moving.move(), installed.rows(), installed.blocks());
    }
  }

  private void finish() {
    try {
      long started = System.nanoTime();
      String how = "in its write-ahead log";
      if (!moves.logMovedIn(moving, copyBytes, forwarded)) {
        how = "in a checkpoint (no write-ahead log)";
        ShardPersistence p = persistence.getIfAvailable();
        if (p != null) {
          p.checkpoint();
        }
      }
      if (!follower.servesIn(term)) {
        // Its lease was lost meanwhile (the state reloads, or has been, without what this move
        // staged): a success would let the coordinator commit slots this pserver may not hold.
        throw MoveRequests.refused(
            moving
                + ": pserver "
                + follower.index()
                + " stopped serving during the move (lease lost, state reloaded): not taken in");
      }
      long durableMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
      metrics.bytes("in", bytes);
      log.info(
          "{}: holds {} rows, {} blocks and {} records ({} bytes), durably {} ({} ms); serving"
              + " them once committed",
          moving,
          installed.rows(),
          installed.blocks(),
          records,
          bytes,
          how,
          durableMs);
      out.onNext(
          MoveInResponse.newBuilder()
              .setRows(installed.rows())
              .setBlocks(installed.blocks())
              .build());
      out.onCompleted();
    } catch (RuntimeException e) {
      follower.incomingFailed(moving);
      out.onError(ErrorMappingInterceptor.map(SlotMovesGrpc.SERVICE_NAME + "/MoveIn", e));
    }
  }

  private void fail(RuntimeException e) {
    done = true;
    if (moving != null) {
      follower.incomingFailed(moving);
    }
    if (named != null) {
      installs.failed(named, e);
    }
    log.warn("MoveIn of {} failed: {}", moving, e.toString());
    out.onError(ErrorMappingInterceptor.map(SlotMovesGrpc.SERVICE_NAME + "/MoveIn", e));
  }

  @Override
  public void onError(Throwable t) {
    synchronized (order) {
      tail = tail.thenRunAsync(() -> failed(t), blocking);
    }
  }

  private synchronized void failed(Throwable t) {
    if (!done && moving != null) {
      log.warn(
          "{}: the old owner's stream failed ({}): dropping what was staged", moving, t.toString());
      follower.incomingFailed(moving);
      installs.failed(
          moving.move(), MoveRequests.refused(moving + ": the old owner's stream failed"));
    }
    done = true;
  }

  @Override
  public void onCompleted() {
    synchronized (order) {
      tail =
          tail.thenRunAsync(
              () -> {
                synchronized (this) {
                  if (!done) {
                    fail(MoveRequests.refused("MoveIn ended before caught_up"));
                  }
                }
              },
              blocking);
    }
  }
}
