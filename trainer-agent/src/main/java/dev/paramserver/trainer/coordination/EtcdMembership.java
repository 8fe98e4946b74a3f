package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.etcd.LeasedKeys;
import dev.paramserver.proto.v1.ModelFile;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A membership held by the trainer's own etcd lease; the job's locks are keys created under it
 * ({@code init_ps/lock}, {@code export/lock}, {@code eval/<pass>}). When the lease is lost (etcd
 * unreachable for its TTL, or the trainer paused past it) a new lease is taken and {@code
 * trainers/<id>} and the locks still held ({@code export/lock}, {@code eval/<pass>}) are put again
 * under it ({@link LeasedKeys}); a lock call in that gap waits for the new lease. If no new lease
 * can be had within the rejoin timeout, the membership is lost and its listeners run.
 */
public final class EtcdMembership implements Membership, JobLocks {
  private static final Logger log = LoggerFactory.getLogger(EtcdMembership.class);

  /** How long a lost lease is renewed for by default before the membership counts as lost. */
  static final Duration DEFAULT_REJOIN_TIMEOUT = Duration.ofMinutes(5);

  private final Coordinator coordinator;
  private final LeasedKeys keys;
  private final String trainerId;
  private final byte[] me;

  /** A membership over {@code lease} (renewed when lost), which it revokes when closed. */
  public EtcdMembership(Coordinator coordinator, Lease lease, String trainerId) {
    this(
        coordinator,
        LeasedKeys.adopt(coordinator, lease, DEFAULT_REJOIN_TIMEOUT, owner(trainerId)),
        trainerId);
  }

  /** A membership over {@code keys}, which it closes when closed. */
  public EtcdMembership(Coordinator coordinator, LeasedKeys keys, String trainerId) {
    this.coordinator = coordinator;
    this.keys = keys;
    this.trainerId = trainerId;
    this.me = trainerId.getBytes(StandardCharsets.UTF_8);
  }

  static String owner(String trainerId) {
    return "trainer '" + trainerId + "'";
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
    LeasedKeys.State s = keys.state();
    return s == LeasedKeys.State.HELD || s == LeasedKeys.State.RENEWING;
  }

  /** Whether the membership is between a lost lease and its renewal. */
  public boolean isRenewing() {
    return keys.state() == LeasedKeys.State.RENEWING;
  }

  @Override
  public void onLost(Runnable listener) {
    keys.onLost(listener);
  }

  @Override
  public void close() {
    keys.close();
  }

  @Override
  public Optional<InitLock> tryInitialisation() {
    String lockKey = coordinator.keys().initLock();
    try {
      if (!coordinator.kv().putIfAbsent(lockKey, me, keys.lease())) {
        return Optional.empty();
      }
    } catch (RuntimeException e) {
      log.warn("cannot take the initialisation lock: {}", e.getMessage());
      return Optional.empty();
    }
    return Optional.of(new EtcdInitLock(lockKey));
  }

  /**
   * Records how the job's model predicts ({@code model/description}, a model file without
   * parameters) for serving replicas, unless a trainer recorded it before. Best effort.
   */
  void describeModel(ModelFile description) {
    String key = coordinator.keys().modelDescription();
    try {
      if (coordinator.kv().compareAndSwap(key, 0, description.toByteArray())) {
        log.info("recorded the job's model description at {}", key);
      }
    } catch (RuntimeException e) {
      log.warn(
          "cannot record the job's model description ({}): Predict will not answer",
          e.getMessage());
    }
  }

  /** Waits for the membership while its lease is renewed; held again under every new lease. */
  @Override
  public boolean claimExport() {
    return keys.claim(coordinator.keys().exportLock(), me);
  }

  /**
   * When etcd does not answer, yes: a pass evaluated twice costs time, one never evaluated loses
   * its figures.
   */
  @Override
  public boolean claimEvaluation(int pass) {
    String key = coordinator.keys().evaluator(pass);
    try {
      if (keys.claim(key, me)) {
        return true;
      }
      log.debug(
          "pass {} is evaluated by trainer {}",
          pass,
          coordinator.kv().get(key).map(KeyValueStore.KeyValue::valueAsString).orElse("?"));
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
