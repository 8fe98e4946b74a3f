package dev.paramserver.trainer.coordination;

import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.JoinResponse;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Retry;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Coordination through the leading master's {@code paramserver.v1.Coordination} service, with no
 * etcd client: Join (the master checks the trainer's model against the job's), one Attend stream
 * that holds the membership (the master keeps {@code trainers/<id>} in etcd under a lease of its
 * own for the trainer) and brings the cluster map, and the job's locks by AcquireLock and
 * ReleaseLock. The Master service's calls go to the same leader.
 */
public final class MasterTrainerCoordination implements TrainerCoordination {
  private static final Logger log = LoggerFactory.getLogger(MasterTrainerCoordination.class);

  private final MasterAddresses masters;
  private final CoordinationClient client;
  private final ClusterMapRegistry pservers = new ClusterMapRegistry();
  private final Duration maxBackoff;
  private final BooleanSupplier stopping;
  private volatile AttendLoop attend;

  /**
   * @param masters the masters' gRPC addresses ({@code host:port}); one of them leads
   * @param rpcTimeout the deadline of each unary call
   * @param maxBackoff the longest pause between retries
   * @param stopping true once the trainer stops: retries and the Attend stream end
   */
  public MasterTrainerCoordination(
      List<String> masters,
      ChannelFactory channels,
      Duration rpcTimeout,
      Duration maxBackoff,
      BooleanSupplier stopping) {
    this.masters = new MasterAddresses(masters);
    this.maxBackoff = maxBackoff;
    this.stopping = stopping;
    this.client =
        new CoordinationClient(
            this.masters, channels, rpcTimeout, Retry.upTo(maxBackoff, stopping));
  }

  /**
   * Joins (retried while no master leads or answers; a refusal is thrown: another model, a taken
   * id) and starts the Attend stream.
   */
  @Override
  public Membership join(JoinDetails details) {
    JoinRequest.Builder builder =
        JoinRequest.newBuilder()
            .setTrainerId(details.trainerId())
            .setSession(details.session())
            .addAllParameters(details.parameters())
            .setMode(details.mode())
            .setStaleness(
                details.mode() == TrainingMode.BOUNDED_STALENESS ? details.staleness() : 0)
            .setEndpoint(details.endpoint())
            .setClient("java " + Runtime.version().feature() + " / paramserver trainer-agent");
    if (!details.description().equals(ModelFile.getDefaultInstance())) {
      builder.setModelDescription(details.description()); // the master records it for serving
    }
    JoinRequest request = builder.build();
    JoinResponse joined = client.call("joining the job", stub -> stub.join(request));
    log.info(
        "joined job {} as trainer {} ({} the model; lease {} ms)",
        joined.getJob(),
        joined.getTrainerId(),
        joined.getDefinedModel() ? "defined" : "matched",
        joined.getLeaseTtlMs());
    AttendLoop loop = new AttendLoop(client, request, joined, pservers, maxBackoff, stopping);
    loop.onLost(
        () -> log.error("trainer {} is no member of the job any more", joined.getTrainerId()));
    loop.start();
    attend = loop;
    return new MasterMembership(client, loop);
  }

  @Override
  public MasterLocator masters() {
    return masters;
  }

  @Override
  public PserverRegistry pservers() {
    return pservers;
  }

  /** The latest cluster map (empty before the Attend stream brought one). */
  public ClusterMap clusterMap() {
    return pservers.latest();
  }

  /** Whether the trainer attends the job now: its Attend stream is open and brought a map. */
  public boolean attending() {
    AttendLoop a = attend;
    return a != null && a.state() == AttendLoop.State.ATTENDING;
  }

  /**
   * Whether the coordination works: the last call found a leading master, and the membership, if
   * any, is not being re-established or lost. A trainer not (or no longer) a member is healthy.
   */
  public boolean healthy() {
    AttendLoop a = attend;
    AttendLoop.State s = a == null ? null : a.state();
    return client.reachable() && s != AttendLoop.State.REJOINING && s != AttendLoop.State.LOST;
  }

  /** The membership's state: NOT_JOINED before the first join, else the Attend loop's. */
  public String membershipState() {
    AttendLoop a = attend;
    return a == null ? "NOT_JOINED" : a.state().name();
  }

  /** The master called now. */
  public String currentMaster() {
    return masters.current().orElse("?");
  }

  @Override
  public void close() {
    AttendLoop a = attend;
    if (a != null) {
      a.close();
    }
    client.close();
  }
}
