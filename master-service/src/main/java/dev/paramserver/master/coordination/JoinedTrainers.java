package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The trainers that joined this master (in memory: a new leader learns them from their next Join),
 * and the rules for trainer ids: the name rule of job names, an id assigned when none is asked for,
 * and no id held by another live member.
 *
 * <p>A trainer id is held by a live member when {@code trainers/<id>} exists, unless it is the same
 * trainer run coming back: its {@code trainer_sessions/<id>} (written by a master beside the
 * registration, under the same lease) names the same session. That is how a trainer re-joins a new
 * leader while the registration the old leader made still lives out its lease.
 */
final class JoinedTrainers {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int ASSIGN_ATTEMPTS = 16;

  private final KeyValueStore kv;
  private final JobKeys keys;
  private final Map<String, Joined> joined = new ConcurrentHashMap<>();

  JoinedTrainers(KeyValueStore kv, JobKeys keys) {
    this.kv = kv;
    this.keys = keys;
  }

  /**
   * A trainer that joined.
   *
   * @param endpoint what {@code trainers/<id>} holds: its admin endpoint, or {@code host:0}
   */
  record Joined(String id, String session, String endpoint, String client) {}

  /**
   * The id a trainer joins as: {@code requestedId}, checked against the name rule and the live
   * members, or a new {@code trainer-<8 hex>} when it is empty.
   */
  String resolveId(String requestedId, String session) {
    if (session.isEmpty()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "session is empty: send an id that is new for every run of the trainer (a random UUID)");
    }
    String id = requestedId.isEmpty() ? assignId() : requestedId;
    if (!JobKeys.isValidName(id)) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "trainer id '"
              + id
              + "' is invalid: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or"
              + " digit (or leave it empty to get one assigned)");
    }
    requireFree(id, session, 0);
    return id;
  }

  /** Records a join (a re-join replaces the earlier one). */
  Joined record(String id, String session, String endpoint, String client) {
    Joined j = new Joined(id, session, endpoint, client);
    joined.put(id, j);
    return j;
  }

  /** The trainer that joined as {@code id} with {@code session}, if it did. */
  Optional<Joined> joined(String id, String session) {
    return Optional.ofNullable(joined.get(id)).filter(j -> j.session().equals(session));
  }

  /**
   * Refuses with TRAINER_ID_TAKEN when another live member holds {@code id}.
   *
   * @param ownLease a lease of this membership whose keys do not count (0: none)
   */
  void requireFree(String id, String session, long ownLease) {
    Optional<KeyValueStore.KeyValue> reg = kv.get(keys.trainer(id));
    if (reg.isEmpty() || reg.get().leaseId() == ownLease && ownLease != 0) {
      return;
    }
    Optional<KeyValueStore.KeyValue> s = kv.get(keys.trainerSession(id));
    boolean sameRun =
        s.isPresent()
            && s.get().leaseId() == reg.get().leaseId()
            && s.get().valueAsString().equals(session);
    if (!sameRun) {
      throw new ServiceException(
          ErrorReason.TRAINER_ID_TAKEN,
          "trainer id '"
              + id
              + "' is held by a live member of the job (registered at "
              + reg.get().valueAsString()
              + "): choose another id, or leave it empty to get one assigned");
    }
  }

  /** Forgets every trainer (this master stopped leading). */
  void clear() {
    joined.clear();
  }

  private String assignId() {
    for (int i = 0; i < ASSIGN_ATTEMPTS; i++) {
      byte[] b = new byte[4];
      RANDOM.nextBytes(b);
      String id = "trainer-" + HexFormat.of().formatHex(b);
      if (!joined.containsKey(id) && kv.get(keys.trainer(id)).isEmpty()) {
        return id;
      }
    }
    throw new IllegalStateException("no free trainer id after " + ASSIGN_ATTEMPTS + " tries");
  }
}
