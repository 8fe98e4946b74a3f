package dev.paramserver.master.state;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.LeaderElection.Leadership;
import dev.paramserver.etcd.Lease;
import dev.paramserver.testsupport.EtcdExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** A master's leadership won in a test's etcd (a job of its own), and job stores fenced on it. */
public final class WonLeadership implements AutoCloseable {
  public final EtcdCoordinator coordinator;
  public final Lease lease;
  private final Leadership leadership;

  public WonLeadership(EtcdExtension etcd) throws InterruptedException {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    lease = coordinator.grantLease(Duration.ofSeconds(5));
    leadership =
        coordinator
            .election(coordinator.keys().masterElection())
            .campaign("test:1".getBytes(StandardCharsets.UTF_8), lease, Duration.ofSeconds(5))
            .orElseThrow();
  }

  /** A job store over {@code kv}, its writes fenced on this leadership. */
  public EtcdJobStore store(KeyValueStore kv) {
    EtcdJobStore store = new EtcdJobStore(kv, coordinator.keys());
    store.fence(new EtcdJobStore.Fence(leadership.key(), leadership.createRevision()));
    return store;
  }

  /** A job store over the coordinator's etcd, fenced on this leadership. */
  public EtcdJobStore store() {
    return store(coordinator.kv());
  }

  @Override
  public void close() {
    lease.revoke();
    coordinator.close();
  }
}
