package dev.paramserver.trainer.coordination;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.coordination.Lease;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A membership held by the trainer's own etcd lease; the job's locks are keys created under it
 * ({@code init_ps/lock}, {@code export/lock}, {@code eval/<pass>}).
 */
public final class EtcdMembership implements Membership, JobLocks {
  private static final Logger log = LoggerFactory.getLogger(EtcdMembership.class);

  private final Coordinator coordinator;
  private final Lease lease;
  private final String trainerId;
  private final byte[] me;

  /** A membership over {@code lease}, which it revokes when closed. */
  public EtcdMembership(Coordinator coordinator, Lease lease, String trainerId) {
    this.coordinator = coordinator;
    this.lease = lease;
    this.trainerId = trainerId;
    this.me = trainerId.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public String trainerId() {
    return trainerId;
  }

  @Override
  public String job() {
    return coordinator.keys().job();
  }

  @Override
  public JobLocks locks() {
    return this;
  }

  @Override
  public boolean isAlive() {
    return lease.isAlive();
  }

  @Override
  public void onLost(Runnable listener) {
    lease.onLost(listener);
  }

  @Override
  public void close() {
    lease.close();
  }

  @Override
  public Optional<InitLock> tryInitialisation() {
    String lockKey = coordinator.keys().initLock();
    try {
      if (!coordinator.kv().putIfAbsent(lockKey, me, lease)) {
        return Optional.empty();
      }
    } catch (RuntimeException e) {
      log.warn("cannot take the initialisation lock: {}", e.getMessage());
      return Optional.empty();
    }
    return Optional.of(new EtcdInitLock(lockKey));
  }

  @Override
  public boolean claimExport() {
    return coordinator.kv().putIfAbsent(coordinator.keys().exportLock(), me, lease);
  }

  /**
   * When etcd does not answer, yes: a pass evaluated twice costs time, one never evaluated loses
   * its figures.
   */
  @Override
  public boolean claimEvaluation(int pass) {
    String key = coordinator.keys().evaluator(pass);
    try {
      if (coordinator.kv().putIfAbsent(key, me, lease)) {
        return true;
      }
      Optional<byte[]> holder = coordinator.kv().get(key).map(KeyValueStore.KeyValue::value);
      if (holder.isPresent() && Arrays.equals(holder.get(), me)) {
        return true;
      }
      log.debug("pass {} is evaluated by trainer {}", pass, holder.map(String::new).orElse("?"));
      return false;
    } catch (RuntimeException e) {
      log.warn("cannot claim the evaluation of pass {} ({}); evaluating it", pass, e.getMessage());
      return true;
    }
  }

  /** {@code init_ps/lock}, held; {@code init_ps/done} records a finished initialisation. */
  private final class EtcdInitLock implements InitLock {
    private final String lockKey;

    EtcdInitLock(String lockKey) {
      this.lockKey = lockKey;
    }

    @Override
    public Optional<String> previousInitId() {
      return coordinator
          .kv()
          .get(coordinator.keys().initDone())
          .map(KeyValueStore.KeyValue::valueAsString);
    }

    @Override
    public void done(String initId) {
      coordinator.kv().put(coordinator.keys().initDone(), initId.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
      try {
        coordinator.kv().delete(lockKey);
      } catch (RuntimeException e) {
        log.warn(
            "cannot release the initialisation lock (it ends with our lease): {}", e.getMessage());
      }
    }
  }
}
