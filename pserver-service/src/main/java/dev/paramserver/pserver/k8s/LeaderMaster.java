package dev.paramserver.pserver.k8s;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.AdminException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;

/**
 * The leader master's admin HTTP API, found as {@code psctl --etcd} finds it: the leader's gRPC
 * address in etcd ({@code master/addr}), then its {@code GetStatus}'s {@code admin_address}. Calls
 * carry the admin token ({@code paramserver.admin.token}, the same for every service of the job).
 * The address is looked up again after a call that got no answer (a new leader).
 */
public final class LeaderMaster implements JobScaler {
  private final Coordinator coordinator;
  private final ChannelFactory channels;
  private final String token;
  private final Duration timeout;
  private AdminClient client; // guarded by this; null: look the leader up

  public LeaderMaster(
      Coordinator coordinator, ChannelFactory channels, String token, Duration timeout) {
    this.coordinator = coordinator;
    this.channels = channels;
    this.token = token;
    this.timeout = timeout;
  }

  @Override
  public void scale(int pservers) throws IOException, InterruptedException {
    call(c -> c.scale(pservers));
  }

  @Override
  public void growTo(int pservers) throws IOException, InterruptedException {
    call(c -> c.growTo(pservers));
  }

  @Override
  public JsonNode scaling() throws IOException, InterruptedException {
    return call(AdminClient::scaling);
  }

  private interface Call<T> {
    T on(AdminClient client) throws IOException, InterruptedException;
  }

  /**
   * One call at a time: an {@link AdminClient} remembers the leader a standby named, so it belongs
   * to one thread at a time (the growth thread and a preStop hook may both call).
   */
  private synchronized <T> T call(Call<T> call) throws IOException, InterruptedException {
    if (client == null) {
      client = AdminClient.create("the leader master", adminUrl(), token, timeout);
    }
    try {
      return call.on(client);
    } catch (AdminException e) {
      if (e.kind() == AdminException.Kind.UNREACHABLE) {
        client = null; // find the leader again next time
      }
      throw e;
    }
  }

  /**
   * {@code http://<admin address>} of the leader master.
   *
   * @throws IOException naming what is missing: no leader in etcd, no answer to GetStatus
   */
  public String adminUrl() throws IOException {
    String key = coordinator.keys().masterAddr();
    String grpc;
    try {
      grpc =
          coordinator
              .kv()
              .get(key)
              .map(KeyValueStore.KeyValue::valueAsString)
              .orElseThrow(
                  () ->
                      new IOException(
                          "no leader master is registered in etcd (" + key + "): is one running?"));
    } catch (RuntimeException e) {
      throw new IOException("cannot read the leader master from etcd (" + key + "): " + e, e);
    }
    ManagedChannel channel = channels.forAddress(grpc);
    try {
      String admin =
          MasterGrpc.newBlockingStub(channel)
              .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
              .getStatus(GetStatusRequest.getDefaultInstance())
              .getAdminAddress();
      if (admin.isEmpty()) {
        throw new IOException("the leader master at " + grpc + " did not say its HTTP address");
      }
      return admin.startsWith("http") ? admin : "http://" + admin;
    } catch (StatusRuntimeException e) {
      throw new IOException(
          "the leader master at " + grpc + " did not answer GetStatus: " + e.getStatus(), e);
    } finally {
      channel.shutdownNow();
    }
  }
}
