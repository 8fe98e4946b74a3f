package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.LeasedKeys;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
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
  private final BooleanSupplier stopping;
  private final EtcdMasterLocator masters;
  private final EtcdPserverRegistry pservers;

  /**
   * @param leaseTtl the time-to-live of the trainer's lease
   */
  public EtcdTrainerCoordination(Coordinator coordinator, Duration leaseTtl) {
    this(coordinator, leaseTtl, EtcdMembership.DEFAULT_REJOIN_TIMEOUT, () -> false);
  }

  /**
   * @param leaseTtl the time-to-live of the trainer's lease
   * @param rejoinTimeout how long a lost lease is renewed for before the membership is lost, and
   *     how long {@link #join} keeps trying while etcd is unreachable
   * @param stopping true once the trainer stops: a join still retrying then gives up
   */
  public EtcdTrainerCoordination(
      Coordinator coordinator,
      Duration leaseTtl,
      Duration rejoinTimeout,
      BooleanSupplier stopping) {
    this.coordinator = coordinator;
    this.leaseTtl = leaseTtl;
    this.rejoinTimeout = rejoinTimeout;
    this.stopping = stopping;
    this.masters = new EtcdMasterLocator(coordinator);
    this.pservers = new EtcdPserverRegistry(coordinator);
  }

  /**
   * Grants a lease and registers the trainer's endpoint under {@code trainers/<id>} with it; a lost
   * lease is replaced and the registration put again ({@link EtcdMembership}). While etcd does not
   * answer (an outage as the trainer starts) the join is tried again, for up to the rejoin timeout,
   * as a lost lease is; an error etcd answered with (a refused credential) fails at once.
   *
   * @throws CoordinationException when etcd refused, or did not answer within the rejoin timeout
   * @throws StoppedException when the trainer stopped while the join was retried
   */
  @Override
  public Membership join(JoinDetails details) {
    String owner = EtcdMembership.owner(details.trainerId());
    long started = System.nanoTime();
    long deadline = started + rejoinTimeout.toNanos();
    CoordinationException[] last = new CoordinationException[1];
    Retry retry =
        new Retry(
            Duration.ofMillis(200),
            Duration.ofSeconds(2),
            () -> stopping.getAsBoolean() || System.nanoTime() - deadline >= 0);
    EtcdMembership membership;
    try {
      membership =
          retry.until(
              "joining the job through etcd",
              attempt -> {
                try {
                  return Optional.of(joinOnce(owner, details));
                } catch (CoordinationException e) {
                  if (coordinator.isConnected()) {
                    throw e; // etcd answered: retrying would get the same answer
                  }
                  if (last[0] == null) {
                    log.warn(
                        "{} could not join the job: {}; trying again for up to {}",
                        owner,
                        e.getMessage(),
                        rejoinTimeout);
                  }
                  last[0] = e;
                  return Optional.empty();
                }
              });
    } catch (StoppedException e) {
      if (last[0] == null || stopping.getAsBoolean()) {
        throw e;
      }
      throw new CoordinationException(
          owner + " could not join the job within " + rejoinTimeout + ": " + last[0].getMessage(),
          last[0]);
    }
    if (last[0] != null) {
      log.info(
          "{} joined the job after {} ms of etcd being unreachable",
          owner,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    }
    return membership;
  }

  /** One attempt: a lease, the registration and the model's description, or nothing left held. */
  private EtcdMembership joinOnce(String owner, JoinDetails details) {
    LeasedKeys keys = LeasedKeys.open(coordinator, leaseTtl, rejoinTimeout, owner);
    EtcdMembership membership;
    try {
      keys.put(
          coordinator.keys().trainer(details.trainerId()),
          details.endpoint().getBytes(StandardCharsets.UTF_8));
      membership = new EtcdMembership(coordinator, keys, details.trainerId());
    } catch (RuntimeException e) {
      keys.close();
      throw e;
    }
    try {
      if (!details.description().equals(ModelFile.getDefaultInstance())) {
        membership.describeModel(
            details.description().toBuilder().setJob(coordinator.keys().job()).build());
      }
    } catch (RuntimeException e) {
      membership.close();
      throw e;
    }
    keys.onLost(
        () ->
            log.error(
                "{} is no member of the job any more: its etcd lease was lost and no new one could"
                    + " be taken within {}",
                owner,
                rejoinTimeout));
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
