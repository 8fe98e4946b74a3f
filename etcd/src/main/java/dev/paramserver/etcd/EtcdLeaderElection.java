package dev.paramserver.etcd;

import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.options.GetOption;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd election recipe on plain keys: each candidate creates {@code <electionKey>/<leaseHex>}
 * under its lease; the candidate whose key has the lowest create revision leads. The others wait
 * for the key just before theirs to be deleted (watched, and re-checked at least every second), so
 * there is no herd when the leader goes. Every wait is bounded.
 */
final class EtcdLeaderElection implements LeaderElection {
  private static final Logger log = LoggerFactory.getLogger(EtcdLeaderElection.class);
  private static final long RECHECK_MILLIS = 1000;

  private final EtcdKeyValueStore kv;
  private final String electionKey;
  private final String prefix;

  EtcdLeaderElection(EtcdKeyValueStore kv, String electionKey) {
    if (electionKey == null || electionKey.isEmpty()) {
      throw new IllegalArgumentException("election key is empty");
    }
    this.kv = kv;
    this.electionKey = electionKey;
    this.prefix = electionKey.endsWith("/") ? electionKey : electionKey + "/";
  }

  @Override
  public Optional<Leadership> campaign(byte[] value, Lease lease, Duration timeout)
      throws InterruptedException {
    if (!lease.isAlive()) {
      throw new CoordinationException(
          "cannot campaign in election "
              + electionKey
              + ": lease "
              + Long.toHexString(lease.id())
              + " is revoked or lost; grant a new one");
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    String myKey = prefix + Long.toHexString(lease.id());
    long myRevision = createCandidate(myKey, value, lease);
    boolean won = false;
    try {
      while (true) {
        if (!lease.isAlive()) {
          throw new CoordinationException(
              "lease "
                  + Long.toHexString(lease.id())
                  + " lost while campaigning in "
                  + electionKey);
        }
        EtcdKeyValueStore.Snapshot snap =
            kv.getPrefixWithRevision(prefix, GetOption.SortTarget.CREATE);
        KeyValueStore.KeyValue before = null;
        boolean mine = false;
        for (KeyValueStore.KeyValue c : snap.kvs()) {
          if (c.key().equals(myKey) && c.createRevision() == myRevision) {
            mine = true;
            break;
          }
          before = c;
        }
        if (!mine) {
          throw new CoordinationException(
              "candidate key " + myKey + " vanished while campaigning (lease expired?)");
        }
        if (before == null) {
          won = true;
          log.info("won election {} with key {} (revision {})", electionKey, myKey, myRevision);
          return Optional.of(new EtcdLeadership(myKey, myRevision));
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return Optional.empty();
        }
        awaitDeletion(
            before.key(), snap.revision() + 1, Math.min(RECHECK_MILLIS, nanosToMillis(left)));
      }
    } finally {
      if (!won) {
        withdraw(myKey, myRevision);
      }
    }
  }

  /** Creates the candidate key, or reuses ours if this lease already campaigns here. */
  private long createCandidate(String key, byte[] value, Lease lease) {
    TxnResponse r = kv.createIfAbsent(key, value, lease.id());
    if (r.isSucceeded()) {
      return r.getPutResponses().get(0).getHeader().getRevision();
    }
    var existing = r.getGetResponses().get(0).getKvs();
    if (existing.isEmpty()) {
      throw new CoordinationException("candidate key " + key + " vanished while being created");
    }
    long rev = existing.get(0).getCreateRevision();
    kv.put(key, value, lease);
    return rev;
  }

  private void awaitDeletion(String key, long fromRevision, long maxMillis)
      throws InterruptedException {
    CountDownLatch gone = new CountDownLatch(1);
    try (PrefixWatch w =
        kv.watchPrefixFrom(
            key,
            fromRevision,
            e -> {
              if (e.type() == KeyValueStore.WatchEvent.Type.DELETE
                  && e.keyValue().key().equals(key)) {
                gone.countDown();
              }
            })) {
      gone.await(maxMillis, TimeUnit.MILLISECONDS);
    }
  }

  private void withdraw(String key, long revision) {
    // an interrupted campaign must still withdraw: clear the flag for this call, then restore it
    boolean interrupted = Thread.interrupted();
    try {
      kv.deleteIfCreatedAt(key, revision);
    } catch (CoordinationException e) {
      log.warn("could not withdraw candidate {}; it ends with its lease: {}", key, e.getMessage());
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public Optional<byte[]> leader() {
    return kv.getPrefixWithRevision(prefix, GetOption.SortTarget.CREATE).kvs().stream()
        .findFirst()
        .map(KeyValueStore.KeyValue::value);
  }

  private static long nanosToMillis(long nanos) {
    return Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos));
  }

  private final class EtcdLeadership implements Leadership {
    private final String key;
    private final long revision;

    EtcdLeadership(String key, long revision) {
      this.key = key;
      this.revision = revision;
    }

    @Override
    public String key() {
      return key;
    }

    @Override
    public long createRevision() {
      return revision;
    }

    @Override
    public boolean isStillLeader() {
      return kv.get(key).map(k -> k.createRevision() == revision).orElse(false);
    }

    @Override
    public void resign() {
      kv.deleteIfCreatedAt(key, revision);
      log.info("resigned from election {} (key {})", electionKey, key);
    }

    @Override
    public String toString() {
      return "Leadership[" + key + "@" + revision + "]";
    }
  }
}
