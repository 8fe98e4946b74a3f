package dev.paramserver.trainer.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.AttendRequest;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.CoordinationGrpc;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.JoinResponse;
import dev.paramserver.rpc.Backoff;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.rpc.StoppedException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds a trainer's membership with the leading master: one Attend stream at a time, on a thread of
 * its own, with a heartbeat every {@code heartbeat_ms}; the cluster maps it receives go to the
 * {@link ClusterMapRegistry}. When the stream breaks (the master died, stepped down or forgot the
 * trainer) it joins again, at the leader if the master named one, and attends again, pausing with a
 * bounded backoff between tries. A join refused for good (another model now, after a failover) ends
 * the membership: it is lost.
 */
final class AttendLoop implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AttendLoop.class);

  /** Where the membership stands. */
  enum State {
    JOINED,
    ATTENDING,
    REJOINING,
    LOST,
    CLOSED
  }

  private final CoordinationClient client;
  private final JoinRequest request;
  private final ClusterMapRegistry registry;
  private final Duration maxBackoff;
  private final BooleanSupplier stopping;
  private final List<Runnable> lostListeners = new CopyOnWriteArrayList<>();
  private final Object signal = new Object();
  private volatile State state = State.JOINED;
  private volatile JoinResponse joined;
  private Throwable broken; // guarded by signal: why the current stream ended
  private boolean streamEnded; // guarded by signal
  private Thread thread;

  /**
   * @param joined the answer to the first Join, made by the caller
   * @param stopping true once the trainer stops: the loop then ends
   */
  AttendLoop(
      CoordinationClient client,
      JoinRequest request,
      JoinResponse joined,
      ClusterMapRegistry registry,
      Duration maxBackoff,
      BooleanSupplier stopping) {
    this.client = client;
    this.request = request.toBuilder().setTrainerId(joined.getTrainerId()).build();
    this.joined = joined;
    this.registry = registry;
    this.maxBackoff = maxBackoff;
    this.stopping = stopping;
  }

  synchronized void start() {
    thread = new Thread(this::run, "trainer-attend");
    thread.setDaemon(true);
    thread.start();
  }

  State state() {
    return state;
  }

  JoinResponse joined() {
    return joined;
  }

  void onLost(Runnable listener) {
    lostListeners.add(listener);
  }

  private boolean ending() {
    return state == State.CLOSED || stopping.getAsBoolean();
  }

  private void run() {
    Backoff backoff = backoff();
    try {
      while (!ending()) {
        if (attendOnce()) {
          backoff.reset();
        }
        if (ending()) {
          break;
        }
        pause(backoff.nextDelayMs());
        state = State.REJOINING;
        rejoin();
      }
    } catch (StoppedException | InterruptedException e) {
      log.debug("attend loop stopped: {}", e.getMessage());
    } catch (StatusRuntimeException e) {
      state = State.LOST;
      log.error(
          "trainer {} lost its membership: the master refused it ({}): {}",
          request.getTrainerId(),
          CoordinationClient.describe(e),
          e.getStatus().getDescription());
      lostListeners.forEach(Runnable::run);
    }
  }

  private Backoff backoff() {
    return new Backoff(Duration.ofMillis(Math.min(100, maxBackoff.toMillis())), maxBackoff);
  }

  /** Waits {@code millis}, or less when the loop closes. */
  private void pause(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000;
    synchronized (signal) {
      long left;
      while (!ending() && (left = deadline - System.nanoTime()) > 0) {
        signal.wait(Math.max(1, left / 1_000_000));
      }
    }
  }

  private void rejoin() throws InterruptedException {
    Retry retry = Retry.upTo(maxBackoff, this::ending);
    Backoff taken = backoff();
    while (true) {
      try {
        joined = client.call("joining the job again", retry, stub -> stub.join(request));
        return;
      } catch (StatusRuntimeException e) {
        // the master may still count the old membership until its lease ends
        if (RpcErrors.reasonOf(e) != ErrorReason.TRAINER_ID_TAKEN) {
          throw e;
        }
        log.info(
            "trainer id {} still held by the broken stream; joining again", request.getTrainerId());
        pause(taken.nextDelayMs());
        if (ending()) {
          throw new StoppedException("joining the job again");
        }
      }
    }
  }

  /**
   * Opens one Attend stream and heartbeats on it until it ends or the loop closes.
   *
   * @return whether the stream delivered a cluster map (it was healthy for a while)
   */
  private boolean attendOnce() throws InterruptedException {
    synchronized (signal) {
      broken = null;
      streamEnded = false;
    }
    CoordinationClient.Target target = client.target();
    Responses responses = new Responses();
    StreamObserver<AttendRequest> out =
        CoordinationGrpc.newStub(target.channel()).attend(responses);
    out.onNext(
        AttendRequest.newBuilder()
            .setTrainerId(request.getTrainerId())
            .setSession(request.getSession())
            .build());
    long heartbeat = heartbeatMillis(joined);
    while (true) {
      synchronized (signal) {
        if (!streamEnded && !ending()) {
          signal.wait(heartbeat);
        }
        if (streamEnded) {
          break;
        }
      }
      if (ending()) {
        out.onCompleted(); // leaves the job: the master ends the membership at once
        awaitEnd(client.rpcTimeout());
        return responses.mapSeen;
      }
      out.onNext(AttendRequest.getDefaultInstance());
    }
    state = State.REJOINING;
    Throwable why;
    synchronized (signal) {
      why = broken;
    }
    log.warn(
        "attend stream to master {} ended ({}); joining again",
        target.address(),
        why == null ? "closed by the master" : CoordinationClient.describe(why));
    client.failed(target, why == null ? Status.UNAVAILABLE.asRuntimeException() : why);
    return responses.mapSeen;
  }

  /** Sends heartbeats three times as often as asked, at least every 2 s: one lost is no harm. */
  static long heartbeatMillis(JoinResponse joined) {
    long asked = joined.getHeartbeatMs() > 0 ? joined.getHeartbeatMs() : 1000;
    if (joined.getLeaseTtlMs() > 0) {
      asked = Math.min(asked, joined.getLeaseTtlMs() / 3);
    }
    return Math.max(10, Math.min(asked, 2000));
  }

  private void awaitEnd(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (signal) {
      while (!streamEnded) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return;
        }
        signal.wait(Math.max(1, left / 1_000_000));
      }
    }
  }

  private void ended(Throwable why) {
    synchronized (signal) {
      streamEnded = true;
      broken = why;
      signal.notifyAll();
    }
  }

  /** The master's answers: cluster maps, then the stream's end. */
  private final class Responses implements StreamObserver<ClusterMap> {
    private volatile boolean mapSeen;

    @Override
    public void onNext(ClusterMap map) {
      if (!mapSeen) {
        mapSeen = true;
        state = State.ATTENDING;
        log.info(
            "attending the job at revision {}: {} of {} pservers, {} trainers",
            map.getRevision(),
            map.getPserversCount(),
            map.getPserversDesired(),
            map.getTrainersCount());
      }
      registry.apply(map);
    }

    @Override
    public void onError(Throwable t) {
      ended(t);
    }

    @Override
    public void onCompleted() {
      ended(null);
    }
  }

  /** Leaves the job: half-closes the stream and waits for the loop to end. */
  @Override
  public void close() {
    Thread t;
    synchronized (this) {
      t = thread;
    }
    if (state != State.LOST) {
      state = State.CLOSED;
    }
    synchronized (signal) {
      signal.notifyAll();
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(client.rpcTimeout().toMillis() + 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
