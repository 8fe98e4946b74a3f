package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.KeyValueStore.KeyValue;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.AcquireLockResponse.Outcome;
import dev.paramserver.proto.v1.LockName;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * Grants and releases the job's locks for attending trainers (the trainer agent's {@code JobLocks}
 * is a trainer's side of them), on the keys the Java trainers take in etcd themselves, with the
 * same values, so that a trainer coordinated here and one on etcd exclude each other: {@code
 * init_ps/lock}, {@code export/lock} and {@code eval/<pass>} hold the holder's trainer id, created
 * if absent under the holder's membership lease (they vanish when the membership ends); {@code
 * init_ps/done} (no lease) holds the init id of the initialisation finished.
 */
final class LockGrants {
  private final KeyValueStore kv;
  private final JobKeys keys;

  LockGrants(KeyValueStore kv, JobKeys keys) {
    this.kv = kv;
    this.keys = keys;
  }

  /**
   * Takes {@code lock} for the trainer of {@code member}. With {@code reinitialise},
   * INIT_PARAMETERS is granted even when an initialisation is recorded done, with that init id in
   * {@code done} (a pserver restarted without a checkpoint needs it again, under the same id).
   */
  AcquireLockResponse acquire(Attendance member, LockName lock, int pass, boolean reinitialise) {
    String key = key(lock, pass);
    if (lock == LockName.INIT_PARAMETERS && !reinitialise) {
      Optional<KeyValue> done = kv.get(keys.initDone());
      if (done.isPresent()) {
        return done(done.get());
      }
    }
    String id = member.trainerId();
    Lease lease = member.lease();
    if (!kv.putIfAbsent(key, bytes(id), lease)) {
      Optional<KeyValue> holder = kv.get(key);
      if (holder.isEmpty()) {
        return held(""); // released meanwhile: the caller asks again
      }
      if (!holder.get().valueAsString().equals(id)) {
        return held(holder.get().valueAsString());
      }
      if (holder.get().leaseId() != lease.id()) {
        // the same trainer took it under an earlier membership (for example through the
        // previous leader): keep it under this one
        kv.put(key, bytes(id), lease);
      }
    }
    AcquireLockResponse.Builder granted =
        AcquireLockResponse.newBuilder().setOutcome(Outcome.GRANTED).setHolder(id);
    if (lock == LockName.INIT_PARAMETERS) {
      Optional<KeyValue> done = kv.get(keys.initDone());
      if (done.isPresent() && !reinitialise) {
        release(member, lock, pass, ""); // finished while we took the lock
        return done(done.get());
      }
      done.ifPresent(d -> granted.setDone(d.valueAsString()));
    }
    return granted.build();
  }

  /**
   * Releases {@code lock} if the trainer of {@code member} holds it; for INIT_PARAMETERS with a
   * non-empty {@code done}, records {@code init_ps/done} first. EVALUATE_PASS is never released (it
   * ends with the membership), as the Java trainers do.
   */
  void release(Attendance member, LockName lock, int pass, String done) {
    String key = key(lock, pass);
    if (lock == LockName.EVALUATE_PASS) {
      return;
    }
    Optional<KeyValue> holder = kv.get(key);
    if (holder.isEmpty() || !holder.get().valueAsString().equals(member.trainerId())) {
      return; // not ours (any more): nothing to release
    }
    if (lock == LockName.INIT_PARAMETERS && !done.isEmpty()) {
      kv.put(keys.initDone(), bytes(done));
    }
    kv.deleteIfCreatedAt(key, holder.get().createRevision());
  }

  private String key(LockName lock, int pass) {
    return switch (lock) {
      case INIT_PARAMETERS -> keys.initLock();
      case EXPORT_MODEL -> keys.exportLock();
      case EVALUATE_PASS -> keys.evaluator(pass);
      case LOCK_NAME_UNSPECIFIED, UNRECOGNIZED ->
          throw new ServiceException(
              ErrorReason.BAD_ARGUMENT,
              "lock is unset or unknown: name INIT_PARAMETERS, EXPORT_MODEL or EVALUATE_PASS");
    };
  }

  private static AcquireLockResponse done(KeyValue done) {
    return AcquireLockResponse.newBuilder()
        .setOutcome(Outcome.DONE)
        .setDone(done.valueAsString())
        .build();
  }

  private static AcquireLockResponse held(String holder) {
    return AcquireLockResponse.newBuilder().setOutcome(Outcome.HELD).setHolder(holder).build();
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
