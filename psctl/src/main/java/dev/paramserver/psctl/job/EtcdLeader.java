package dev.paramserver.psctl.job;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.psctl.command.UnreachableException;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** Finds the leader master's HTTP address through etcd: {@code master/addr}, then its GetStatus. */
final class EtcdLeader {
  private EtcdLeader() {}

  /**
   * @throws UnreachableException when etcd or the leader does not answer, or no leader is
   *     registered
   */
  static String adminAddress(EtcdSettings settings, Duration timeout) throws UnreachableException {
    String endpoints = String.join(",", settings.endpoints());
    String job = settings.job();
    String grpc;
    try (EtcdCoordinator c = EtcdCoordinator.connect(settings)) {
      grpc =
          c.kv()
              .get(c.keys().masterAddr())
              .map(KeyValueStore.KeyValue::valueAsString)
              .orElseThrow(
                  () ->
                      new UnreachableException(
                          "no leader master is registered for job '"
                              + job
                              + "' in etcd at "
                              + endpoints
                              + " (key "
                              + c.keys().masterAddr()
                              + "): is the job running, and is --job right?",
                          null));
    } catch (RuntimeException e) {
      throw new UnreachableException(
          "cannot read the leader of job '" + job + "' from etcd at " + endpoints + ": " + e, e);
    }
    ManagedChannel channel = ChannelFactory.plaintext().forAddress(grpc);
    try {
      String admin =
          MasterGrpc.newBlockingStub(channel)
              .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
              .getStatus(GetStatusRequest.getDefaultInstance())
              .getAdminAddress();
      if (admin.isEmpty()) {
        throw new IllegalStateException(
            "the leader master at " + grpc + " did not say its HTTP address: use --master URL");
      }
      return "http://" + admin;
    } catch (io.grpc.StatusRuntimeException e) {
      throw new UnreachableException(
          "the leader master at " + grpc + " did not answer GetStatus: " + e.getStatus(), e);
    } finally {
      channel.shutdownNow();
    }
  }
}
