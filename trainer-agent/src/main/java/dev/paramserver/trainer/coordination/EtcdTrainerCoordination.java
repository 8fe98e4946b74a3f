package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.LeasedKeys;
import dev.paramserver.proto.v1.ModelFile;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Coordination through etcd, by the trainer itself: it registers under {@code trainers/<id>} with a
 * lease of its own, takes the job's locks as keys under that lease, reads the master's address from
 * {@code master/addr} and the pservers from {@code ps_desired} and {@code ps/<idx>}. The etcd
 * connection (the {@link Coordinator}) belongs to the Spring context, not to this.
 */
public final class EtcdTrainerCoordination implements TrainerCoordination {
  private static final Logger log = LoggerFactory.getLogger(EtcdTrainerCoordination.class);

  private final Coordinator coordinator;
  private final Duration leaseTtl;
  private final Duration rejoinTimeout;
  private final EtcdMasterLocator masters;
  private final EtcdPserverRegistry pservers;

  /**
   * @param leaseTtl the time-to-live of the trainer's lease
   */
  public EtcdTrainerCoordination(Coordinator coordinator, Duration leaseTtl) {
    this(coordinator, leaseTtl, EtcdMembership.DEFAULT_REJOIN_TIMEOUT);
  }

  /**
   * @param leaseTtl the time-to-live of the trainer's lease
   * @param rejoinTimeout how long a lost lease is renewed for before the membership is lost
   */
  public EtcdTrainerCoordination(
      Coordinator coordinator, Duration leaseTtl, Duration rejoinTimeout) {
    this.coordinator = coordinator;
    this.leaseTtl = leaseTtl;
    this.rejoinTimeout = rejoinTimeout;
    this.masters = new EtcdMasterLocator(coordinator);
    this.pservers = new EtcdPserverRegistry(coordinator);
  }

  /**
   * Grants a lease and registers the trainer's endpoint under {@code trainers/<id>} with it; a lost
   * lease is replaced and the registration put again ({@link EtcdMembership}).
   */
  @Override
  public Membership join(JoinDetails details) {
    String owner = EtcdMembership.owner(details.trainerId());
    LeasedKeys keys = LeasedKeys.open(coordinator, leaseTtl, rejoinTimeout, owner);
    try {
      keys.put(
          coordinator.keys().trainer(details.trainerId()),
          details.endpoint().getBytes(StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      keys.close();
      throw e;
    }
    keys.onLost(
        () ->
            log.error(
                "{} is no member of the job any more: its etcd lease was lost and no new one could"
                    + " be taken within {}",
                owner,
                rejoinTimeout));
    EtcdMembership membership = new EtcdMembership(coordinator, keys, details.trainerId());
    if (!details.description().equals(ModelFile.getDefaultInstance())) {
      membership.describeModel(
          details.description().toBuilder().setJob(coordinator.keys().job()).build());
    }
    return membership;
  }

  @Override
  public MasterLocator masters() {
    return masters;
  }

  @Override
  public PserverRegistry pservers() {
    return pservers;
  }

  @Override
  public void close() {
    masters.close();
  }
}
