package dev.paramserver.etcd;

import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Leases granted straight through jetcd and never kept alive, so tests can watch a lease expire the
 * way a crashed process's lease does.
 */
final class RawLeases implements AutoCloseable {
  private final Client client;

  RawLeases(String endpoint) {
    this.client = Client.builder().endpoints(endpoint).build();
  }

  /** A lease of {@code seconds} that nobody keeps alive. */
  Lease unkept(long seconds) throws Exception {
    long id = client.getLeaseClient().grant(seconds).get(5, TimeUnit.SECONDS).getID();
    return new Lease() {
      @Override
      public long id() {
        return id;
      }

      @Override
      public Duration ttl() {
        return Duration.ofSeconds(seconds);
      }

      @Override
      public boolean isAlive() {
        return true; // the process that held it does not know yet: that is the point
      }

      @Override
      public void onLost(Runnable listener) {}

      @Override
      public void revoke() {}
    };
  }

  /** Revokes a lease behind its holder's back. */
  void revokeBehindTheBack(long id) throws Exception {
    client.getLeaseClient().revoke(id).get(5, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    client.close();
  }
}
