package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.Lease;
import dev.paramserver.master.coordination.Attendance.Ending;
import dev.paramserver.master.coordination.JoinedTrainers.Joined;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The attendances this master holds: one membership per attending trainer. Attending grants the
 * trainer an etcd lease and puts {@code trainer_sessions/<id>} (its session) and {@code
 * trainers/<id>} (its endpoint) under it, so every part of the job that counts trainers through
 * etcd counts this one. A membership ends when its stream ends, when no heartbeat came for the
 * lease TTL, when the lease is lost, or when this master steps down; ending revokes the lease at
 * once, so its keys (and the locks taken under it) vanish.
 */
final class Attendances {
  private static final Logger log = LoggerFactory.getLogger(Attendances.class);

  private final Coordinator coordinator;
  private final JoinedTrainers trainers;
  private final ClusterMapFeed feed;
  private final Duration ttl;
  private final Executor revoker;
  private final Map<String, Attendance> live = new ConcurrentHashMap<>();

  Attendances(
      Coordinator coordinator,
      JoinedTrainers trainers,
      ClusterMapFeed feed,
      Duration ttl,
      Executor revoker) {
    this.coordinator = coordinator;
    this.trainers = trainers;
    this.feed = feed;
    this.ttl = ttl;
    this.revoker = revoker;
  }

  /**
   * Starts the membership of a joined trainer and sends it the cluster map; a membership of the
   * same trainer held already (an older stream) ends first.
   */
  Attendance attend(String id, String session, AttendSink sink) {
    Joined joined =
        trainers
            .joined(id, session)
            .orElseThrow(
                () ->
                    new ServiceException(
                        ErrorReason.NOT_JOINED,
                        "trainer '"
                            + id
                            + "' (session '"
                            + session
                            + "') has not joined this master: call Join first, then Attend"));
    Attendance older = live.get(id);
    if (older != null) {
      end(older, Ending.FAILED, notJoined(id, "a newer Attend stream of the trainer replaced it"));
    }
    Lease lease = coordinator.grantLease(ttl);
    Attendance m = new Attendance(id, session, lease, sink);
    try {
      trainers.requireFree(id, session, lease.id());
      coordinator.kv().put(coordinator.keys().trainerSession(id), bytes(session), lease);
      coordinator.kv().put(coordinator.keys().trainer(id), bytes(joined.endpoint()), lease);
    } catch (RuntimeException e) {
      lease.revoke();
      throw e;
    }
    live.put(id, m);
    lease.onLost(
        () ->
            end(
                m,
                Ending.FAILED,
                notJoined(id, "its etcd lease was lost (etcd unreachable for the lease TTL)")));
    try {
      m.accept(feed.subscribe(m));
    } catch (RuntimeException e) {
      end(m, Ending.GONE, null); // the caller fails the stream with e
      throw e;
    }
    log.info(
        "trainer '{}' ({}) attends: trainers/{} = {} under lease {}",
        id,
        joined.client().isEmpty() ? "no client named" : joined.client(),
        id,
        joined.endpoint(),
        Long.toHexString(lease.id()));
    return m;
  }

  /** The live membership of {@code id}, or NOT_JOINED. */
  Attendance require(String id) {
    Attendance m = live.get(id);
    if (m == null || !m.isLive()) {
      throw new ServiceException(
          ErrorReason.NOT_JOINED,
          "trainer '"
              + id
              + "' holds no membership on this master: call Join, keep an Attend stream open, then"
              + " call again");
    }
    return m;
  }

  Optional<Attendance> get(String id) {
    return Optional.ofNullable(live.get(id));
  }

  int size() {
    return live.size();
  }

  /** Ends every membership whose trainer sent no heartbeat for the lease TTL. */
  void expireSilent() {
    long now = System.nanoTime();
    for (Attendance m : List.copyOf(live.values())) {
      if (m.silentFor(ttl.toNanos(), now)) {
        end(
            m,
            Ending.FAILED,
            notJoined(m.trainerId(), "no heartbeat came for " + ttl.toMillis() + " ms"));
      }
    }
  }

  /** Ends every membership: this master steps down or stops. */
  void endAll(ServiceException notLeader) {
    for (Attendance m : List.copyOf(live.values())) {
      end(m, Ending.RECONNECT, notLeader);
    }
  }

  /** Ends {@code m} (once) and revokes its lease off the caller's thread. */
  void end(Attendance m, Ending how, ServiceException why) {
    live.remove(m.trainerId(), m);
    feed.unsubscribe(m);
    if (!m.end(how, why)) {
      return;
    }
    log.info(
        "trainer '{}' membership ends ({}{})",
        m.trainerId(),
        how,
        why == null ? "" : ": " + why.getMessage());
    try {
      revoker.execute(m.lease()::revoke);
    } catch (RuntimeException e) {
      m.lease().revoke(); // the executor stopped: revoke here
    }
  }

  private static ServiceException notJoined(String id, String why) {
    return new ServiceException(
        ErrorReason.NOT_JOINED,
        "the membership of trainer '" + id + "' ended: " + why + "; Join and Attend again");
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
