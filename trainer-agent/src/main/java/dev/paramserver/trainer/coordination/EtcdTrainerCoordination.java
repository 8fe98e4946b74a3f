package dev.paramserver.trainer.coordination;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.Lease;
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
  private final EtcdMasterLocator masters;
  private final EtcdPserverRegistry pservers;

  /**
   * @param leaseTtl the time-to-live of the trainer's lease
   */
  public EtcdTrainerCoordination(Coordinator coordinator, Duration leaseTtl) {
    this.coordinator = coordinator;
    this.leaseTtl = leaseTtl;
    this.masters = new EtcdMasterLocator(coordinator);
    this.pservers = new EtcdPserverRegistry(coordinator);
  }

  /** Grants a lease and registers the trainer's endpoint under {@code trainers/<id>} with it. */
  @Override
  public Membership join(JoinDetails details) {
    Lease lease = coordinator.grantLease(leaseTtl);
    try {
      coordinator
          .kv()
          .put(
              coordinator.keys().trainer(details.trainerId()),
              details.endpoint().getBytes(StandardCharsets.UTF_8),
              lease);
    } catch (RuntimeException e) {
      lease.close();
      throw e;
    }
    lease.onLost(
        () -> log.error("trainer lease lost: etcd unreachable for longer than {}", leaseTtl));
    return new EtcdMembership(coordinator, lease, details.trainerId());
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
