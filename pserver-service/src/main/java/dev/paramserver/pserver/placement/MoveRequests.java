package dev.paramserver.pserver.placement;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.MoveInChunk;
import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.replication.ReplicationClock;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.tensor.SlotMap;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.stereotype.Component;

/**
 * The move calls this pserver takes (docs/explanation/elastic.md), the door of the SlotMoves
 * adapter ({@code pserver.grpc.SlotMovesGrpcService}): {@code MoveOut} from the coordinator to a
 * slot's old owner, checked and run by an {@link OutgoingMove}, one attempt at a time, and {@code
 * MoveIn} from the old owner to the new one ({@link IncomingMove}). Calls that are refused throw
 * FAILED_PRECONDITION.
 */
@Component
public final class MoveRequests {
  private final ParameterShard shard;
  private final ShardMoves moves;
  private final CopyInstalls installs = new CopyInstalls();
  private final PlacementFollower follower;
  private final Coordinator coordinator;
  private final PserverProperties properties;
  private final MoveMetrics metrics;
  private final ObjectProvider<ShardPersistence> persistence;
  private final Executor blocking;
  private final ChannelFactory channels;
  private final ReplicationClock clock;
  // the attempt running or about to run here (guarded by attempts): at most one runs at a time
  private final Object attempts = new Object();
  private OutgoingMove running;

  /**
   * @param channels dials the new owner of moving slots (the service's TLS and interceptors, as
   *     replication's calls)
   */
  @Autowired
  public MoveRequests(
      ParameterShard shard,
      ShardMoves moves,
      PlacementFollower follower,
      Coordinator coordinator,
      PserverProperties properties,
      MoveMetrics metrics,
      ObjectProvider<ShardPersistence> persistence,
      @Qualifier("pserverBlockingExecutor") Executor blocking,
      ChannelFactory channels) {
    this(
        shard,
        moves,
        follower,
        coordinator,
        properties,
        metrics,
        persistence,
        blocking,
        channels,
        ReplicationClock.SYSTEM);
  }

  /**
   * As the other constructor, with the time and waits of a move out of here (its deadlines, its
   * wait for the new owner, for an earlier attempt to end) on {@code clock}: a simulation's.
   */
  public MoveRequests(
      ParameterShard shard,
      ShardMoves moves,
      PlacementFollower follower,
      Coordinator coordinator,
      PserverProperties properties,
      MoveMetrics metrics,
      ObjectProvider<ShardPersistence> persistence,
      Executor blocking,
      ChannelFactory channels,
      ReplicationClock clock) {
    this.shard = shard;
    this.moves = moves;
    this.follower = follower;
    this.coordinator = coordinator;
    this.properties = properties;
    this.metrics = metrics;
    this.persistence = persistence;
    this.blocking = blocking;
    this.channels = channels;
    this.clock = clock;
  }

  /**
   * Moves {@code move}'s slots out of this pserver; waits until the new owner has caught up (a
   * blocking thread's call). A running earlier attempt is cancelled and waited for first.
   */
  public MoveOutResponse moveOut(SlotMove move) {
    checkCurrent(move);
    OutgoingMove attempt =
        new OutgoingMove(moves, follower, metrics, properties.moveTimeout(), move, channels, clock);
    OutgoingMove before;
    synchronized (attempts) {
      before = running;
      running = attempt;
    }
    try {
      if (before != null) {
        supersede(before, attempt, move);
      }
      return attempt.run(checkMoveOut(move));
    } finally {
      attempt.ended().complete(null);
      synchronized (attempts) {
        if (running == attempt) {
          running = null;
        }
      }
    }
  }

  /**
   * Cancels the attempt running {@code before} (an earlier attempt: etcd's move is {@code move}
   * now) and waits until it has ended (rolled back what it froze, detached its tap), so two
   * attempts never interleave.
   *
   * @throws StatusRuntimeException UNAVAILABLE when it did not end within {@code move-timeout} (it
   *     stays the attempt the next one waits for)
   */
  private void supersede(OutgoingMove before, OutgoingMove attempt, SlotMove move) {
    before.cancel("attempt " + move.getAttempt() + " of move " + move.getId() + " began");
    try {
      clock.get(before.ended(), properties.moveTimeout().toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.UNAVAILABLE.withDescription("pserver is stopping").asRuntimeException();
    } catch (ExecutionException | TimeoutException e) {
      synchronized (attempts) {
        if (running == attempt) {
          running = before;
        }
      }
      throw Status.UNAVAILABLE
          .withDescription(
              before.moving()
                  + " (attempt "
                  + before.moving().move().getAttempt()
                  + ") did not end within "
                  + properties.moveTimeout()
                  + " of being cancelled: retry the move")
          .asRuntimeException();
    }
  }

  /**
   * Refuses (FAILED_PRECONDITION) a move that is not etcd's move in progress out of this pserver
   * (an attempt of it that is over, or another move).
   */
  private void checkCurrent(SlotMove move) {
    if (properties.replicas() > 1) {
      throw refused(
          "moving slots of a job with replicas="
              + properties.replicas()
              + " is not supported yet (docs/explanation/elastic.md)");
    }
    if (shard.mode() != TrainingMode.ASYNC) {
      throw refused(
          "moving slots of a job in training mode "
              + shard.mode()
              + " is not supported yet: only ASYNC jobs can be scaled");
    }
    int index = follower.index();
    if (index != move.getFrom()) {
      throw refused(
          "move "
              + move.getId()
              + " moves slots out of pserver "
              + move.getFrom()
              + ", but this is pserver "
              + index);
    }
    if (move.getTo() == move.getFrom()) {
      throw refused("move " + move.getId() + " moves slots from pserver " + index + " to itself");
    }
    PlacementStore.Read read = follower.refresh();
    if (read.move().isEmpty() || !read.move().get().equals(move)) {
      throw refused(
          "move "
              + move.getId()
              + " (epoch "
              + move.getEpoch()
              + ", attempt "
              + move.getAttempt()
              + ") is not the move in progress in etcd ("
              + read.move()
                  .map(m -> m.getId() + " epoch " + m.getEpoch() + " attempt " + m.getAttempt())
                  .orElse("none")
              + "): begin it with PlacementStore.begin first");
    }
  }

  /**
   * Refuses (FAILED_PRECONDITION) a move this pserver cannot make now; returns the new owner's
   * address.
   */
  private String checkMoveOut(SlotMove move) {
    checkCurrent(move);
    int index = follower.index();
    if (follower.outgoing() != null) {
      throw refused(
          "pserver " + index + " is still moving " + follower.outgoing() + ": one move at a time");
    }
    SlotMap map = follower.map();
    if (map.epoch() + 1 != move.getEpoch()) {
      throw refused(
          "move "
              + move.getId()
              + " commits epoch "
              + move.getEpoch()
              + " but the committed placement is at epoch "
              + map.epoch());
    }
    if (move.getSlotCount() != map.slots()) {
      throw refused(
          "move "
              + move.getId()
              + " is of a placement of "
              + move.getSlotCount()
              + " slots, the job's has "
              + map.slots());
    }
    for (int s : move.getSlotsList()) {
      if (s < 0 || s >= map.slots() || map.ownerOfSlot(s) != index) {
        throw refused(
            "move "
                + move.getId()
                + " names slot "
                + s
                + ", which pserver "
                + index
                + " does not own at epoch "
                + map.epoch());
      }
    }
    KeyValueStore kv = coordinator.kv();
    return kv.get(coordinator.keys().ps(move.getTo()))
        .map(KeyValueStore.KeyValue::valueAsString)
        .orElseThrow(
            () ->
                refused(
                    "pserver "
                        + move.getTo()
                        + " (the move's new owner) is not registered in etcd ("
                        + coordinator.keys().ps(move.getTo())
                        + ")"));
  }

  static StatusRuntimeException refused(String why) {
    return Status.FAILED_PRECONDITION.withDescription(why).asRuntimeException();
  }

  /** Takes moving slots in from their old owner: the stream of {@code MoveIn}'s chunks. */
  public StreamObserver<MoveInChunk> moveIn(StreamObserver<MoveInResponse> out) {
    return new IncomingMove(moves, follower, metrics, persistence, blocking, installs, out);
  }

  /**
   * Completes once this pserver, the new owner, has installed the copy of attempt {@code move} (the
   * rows and blocks installed), or fails once its MoveIn failed: the old owner waits for it before
   * refusing the slots, so that the install is not inside the stall.
   */
  public CompletableFuture<MoveInResponse> copyInstalled(SlotMove move) {
    return installs.of(move);
  }
}
