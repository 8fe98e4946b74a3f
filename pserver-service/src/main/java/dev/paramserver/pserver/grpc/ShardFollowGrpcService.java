package dev.paramserver.pserver.grpc;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.proto.v1.FollowedRecord;
import dev.paramserver.proto.v1.ShardCopyChunk;
import dev.paramserver.proto.v1.ShardFollowGrpc;
import dev.paramserver.pserver.follow.Follower;
import dev.paramserver.pserver.follow.ShardFeed;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.grpc.server.service.GrpcService;

/**
 * The ShardFollow gRPC service of a primary: each Follow stream runs on a thread of its own that
 * sends the copy (if any) in chunks and then the follower's records, as fast as the follower reads
 * them (gRPC flow control: it waits while the stream is not ready, and the feed cuts off a follower
 * that falls too far behind). The stream ends when this pserver stops serving the shard or the
 * shard's history changes (a new feed epoch).
 */
@GrpcService
public final class ShardFollowGrpcService extends ShardFollowGrpc.ShardFollowImplBase {
  private static final Logger log = LoggerFactory.getLogger(ShardFollowGrpcService.class);

  /** Follow streams served at once; more are refused (RESOURCE_EXHAUSTED). */
  static final int MAX_FOLLOWERS = 64;

  private static final int CHUNK = 1 << 20;
  private static final long POLL_MS = 200;

  private final ShardFeed feed;
  private final ShardLifecycle lifecycle;
  private final AtomicInteger streams = new AtomicInteger();

  public ShardFollowGrpcService(ShardFeed feed, ShardLifecycle lifecycle) {
    this.feed = feed;
    this.lifecycle = lifecycle;
  }

  @Override
  public void follow(FollowRequest request, StreamObserver<FollowMessage> observer) {
    ServerCallStreamObserver<FollowMessage> out =
        (ServerCallStreamObserver<FollowMessage>) observer;
    int index = request.getIndex();
    if (!serves(index)) {
      throw new ServiceException(
          ErrorReason.NOT_PRIMARY,
          "this pserver is not the primary of shard " + index + ": follow the one in ps/" + index);
    }
    if (streams.incrementAndGet() > MAX_FOLLOWERS) {
      streams.decrementAndGet();
      throw new ServiceException(
          ErrorReason.TOO_LARGE,
          "shard " + index + " already has " + MAX_FOLLOWERS + " followers: follow another time");
    }
    Object ready = new Object();
    out.setOnReadyHandler(
        () -> {
          synchronized (ready) {
            ready.notifyAll();
          }
        });
    Thread t =
        new Thread(
            () -> {
              try {
                stream(request, out, ready);
              } finally {
                streams.decrementAndGet();
              }
            },
            "pserver-follow-" + index);
    t.setDaemon(true);
    t.start();
  }

  private boolean serves(int index) {
    return lifecycle.role().serves() && lifecycle.index() == index;
  }

  private void stream(
      FollowRequest request, ServerCallStreamObserver<FollowMessage> out, Object ready) {
    Follower f = null;
    try {
      f = feed.follow(request.getEpoch(), request.getFromSeq(), request.getInitId());
      byte[] copy = f.copy();
      if (copy != null) {
        for (int at = 0; at == 0 || at < copy.length; at += CHUNK) {
          int n = Math.min(CHUNK, copy.length - at);
          ShardCopyChunk.Builder c =
              ShardCopyChunk.newBuilder()
                  .setSequence(f.start())
                  .setPlacementEpoch(f.copyPlacementEpoch())
                  .setInitialised(true)
                  .setData(ByteString.copyFrom(copy, at, n))
                  .setLast(at + n >= copy.length);
          if (!send(out, ready, FollowMessage.newBuilder().setEpoch(f.epoch()).setCopy(c))) {
            return;
          }
        }
      }
      while (!out.isCancelled()) {
        if (f.isCut() || !serves(request.getIndex())) {
          end(out, f, request.getIndex());
          return;
        }
        ShardFeed.Entry e = f.next(POLL_MS);
        if (e != null) {
          FollowedRecord r =
              FollowedRecord.newBuilder()
                  .setSequence(e.sequence())
                  .setRecord(e.record())
                  .setAppliedMs(e.appliedMs())
                  .setPlacementEpoch(e.placementEpoch())
                  .build();
          if (!send(out, ready, FollowMessage.newBuilder().setEpoch(f.epoch()).setRecord(r))) {
            return;
          }
        }
      }
    } catch (ServiceException e) {
      fail(out, RpcErrors.toStatus(e));
    } catch (IOException | RuntimeException e) {
      log.warn("follow stream of shard {} failed", request.getIndex(), e);
      fail(
          out,
          RpcErrors.toStatus(
              ErrorReason.SHUTTING_DOWN,
              "the copy of shard " + request.getIndex() + " failed: follow again"));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      if (f != null) {
        feed.leave(f);
      }
    }
  }

  private static void end(ServerCallStreamObserver<FollowMessage> out, Follower f, int index) {
    if (f.tooSlow()) {
      fail(
          out,
          RpcErrors.toStatus(
              ErrorReason.FOLLOWER_TOO_SLOW,
              "the follower of shard "
                  + index
                  + " fell more than "
                  + ShardFeed.QUEUE_RECORDS
                  + " records behind: follow again"));
    } else {
      fail(
          out,
          RpcErrors.toStatus(
              ErrorReason.SHUTTING_DOWN,
              "shard "
                  + index
                  + "'s history changed or this pserver stopped serving it: follow the primary"
                  + " in ps/"
                  + index
                  + " again"));
    }
  }

  private static void fail(ServerCallStreamObserver<FollowMessage> out, RuntimeException status) {
    try {
      out.onError(status);
    } catch (RuntimeException ignored) {
      // the call was cancelled meanwhile
    }
  }

  /** Waits until the stream is ready, then sends; false when the call was cancelled. */
  private static boolean send(
      ServerCallStreamObserver<FollowMessage> out, Object ready, FollowMessage.Builder m)
      throws InterruptedException {
    synchronized (ready) {
      while (!out.isReady()) {
        if (out.isCancelled()) {
          return false;
        }
        ready.wait(POLL_MS);
      }
    }
    if (out.isCancelled()) {
      return false;
    }
    out.onNext(m.build());
    return true;
  }
}
