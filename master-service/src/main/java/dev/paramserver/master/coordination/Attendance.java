package dev.paramserver.master.coordination;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.ClusterMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * One attending trainer: its membership of the job as this master holds it while the trainer's
 * Attend stream is open (the trainer's own handle on it is the trainer agent's {@code Membership}):
 * the etcd lease its {@code trainers/<id>} key lives under, and when it last sent a heartbeat. It
 * ends once; ending revokes the lease (the caller does, off the stream's thread).
 */
public final class Attendance implements Consumer<ClusterMap> {
  private final String trainerId;
  private final String session;
  private final Lease lease;
  private final AttendSink sink;
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile long lastHeartbeatNanos;

  Attendance(String trainerId, String session, Lease lease, AttendSink sink) {
    this.trainerId = trainerId;
    this.session = session;
    this.lease = lease;
    this.sink = sink;
    this.lastHeartbeatNanos = System.nanoTime();
  }

  String trainerId() {
    return trainerId;
  }

  String session() {
    return session;
  }

  Lease lease() {
    return lease;
  }

  boolean isLive() {
    return !ended.get() && lease.isAlive();
  }

  public void heartbeat() {
    lastHeartbeatNanos = System.nanoTime();
  }

  /** True when no heartbeat came for {@code ttlNanos}. */
  boolean silentFor(long ttlNanos, long nowNanos) {
    return nowNanos - lastHeartbeatNanos >= ttlNanos;
  }

  /** Sends a cluster map, unless the membership ended. */
  @Override
  public void accept(ClusterMap map) {
    synchronized (sink) {
      if (!ended.get()) {
        try {
          sink.send(map);
        } catch (RuntimeException e) {
          // the stream was cancelled meanwhile: its end is reported to the membership apart
        }
      }
    }
  }

  /** How a membership ends, for its stream. */
  enum Ending {
    /** The trainer half-closed: complete the stream. */
    LEFT,
    /** The stream broke or was cancelled: nothing to send. */
    GONE,
    /** Fail the stream with the reason. */
    FAILED,
    /** The master steps down: the trainer reconnects. */
    RECONNECT
  }

  /**
   * Ends the membership (the first call only) and tells the stream.
   *
   * @return whether this call ended it (the caller then revokes the lease)
   */
  boolean end(Ending how, ServiceException why) {
    if (!ended.compareAndSet(false, true)) {
      return false;
    }
    synchronized (sink) {
      try {
        switch (how) {
          case LEFT -> sink.complete();
          case FAILED -> sink.fail(why);
          case RECONNECT -> sink.reconnect(why);
          case GONE -> {}
        }
      } catch (RuntimeException e) {
        // the stream is gone already: nothing to tell
      }
    }
    return true;
  }
}
