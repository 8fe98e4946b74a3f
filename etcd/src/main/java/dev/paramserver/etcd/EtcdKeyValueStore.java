package dev.paramserver.etcd;

import static dev.paramserver.etcd.EtcdCalls.bytes;

import io.etcd.jetcd.KV;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/** {@link KeyValueStore} on jetcd's KV and Watch clients; every call bounded by the timeout. */
final class EtcdKeyValueStore implements KeyValueStore {
  private final KV kv;
  private final Watch watch;
  private final EtcdCalls calls;
  private final ScheduledExecutorService scheduler;

  EtcdKeyValueStore(KV kv, Watch watch, EtcdCalls calls, ScheduledExecutorService scheduler) {
    this.kv = kv;
    this.watch = watch;
    this.calls = calls;
    this.scheduler = scheduler;
  }

  @Override
  public Optional<KeyValue> get(String key) {
    GetResponse r = calls.await(kv.get(bytes(key)), "get " + key);
    return r.getKvs().stream().findFirst().map(EtcdCalls::toKeyValue);
  }

  @Override
  public List<KeyValue> getPrefix(String prefix) {
    GetResponse r =
        calls.await(
            kv.get(bytes(prefix), GetOption.builder().isPrefix(true).build()),
            "get prefix " + prefix);
    return r.getKvs().stream().map(EtcdCalls::toKeyValue).toList();
  }

  /** Like {@link #getPrefix} but also returns the store revision the read saw. */
  Snapshot getPrefixWithRevision(String prefix, GetOption.SortTarget sort) {
    GetOption option =
        GetOption.builder()
            .isPrefix(true)
            .withSortField(sort)
            .withSortOrder(GetOption.SortOrder.ASCEND)
            .build();
    GetResponse r = calls.await(kv.get(bytes(prefix), option), "get prefix " + prefix);
    return new Snapshot(
        r.getKvs().stream().map(EtcdCalls::toKeyValue).toList(), r.getHeader().getRevision());
  }

  record Snapshot(List<KeyValue> kvs, long revision) {}

  @Override
  public long put(String key, byte[] value) {
    return calls.await(kv.put(bytes(key), bytes(value)), "put " + key).getHeader().getRevision();
  }

  @Override
  public long put(String key, byte[] value, Lease lease) {
    requireAlive(lease, "put " + key);
    return calls
        .await(
            kv.put(bytes(key), bytes(value), PutOption.builder().withLeaseId(lease.id()).build()),
            "put " + key + " under lease " + Long.toHexString(lease.id()))
        .getHeader()
        .getRevision();
  }

  @Override
  public boolean putIfAbsent(String key, byte[] value, Lease lease) {
    requireAlive(lease, "putIfAbsent " + key);
    return createIfAbsent(key, value, lease.id()).isSucceeded();
  }

  /** Txn: create the key under the lease if absent, else read it. */
  TxnResponse createIfAbsent(String key, byte[] value, long leaseId) {
    return calls.await(
        kv.txn()
            .If(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
            .Then(
                Op.put(bytes(key), bytes(value), PutOption.builder().withLeaseId(leaseId).build()))
            .Else(Op.get(bytes(key), GetOption.DEFAULT))
            .commit(),
        "create-if-absent " + key);
  }

  @Override
  public boolean compareAndSwap(String key, long expectedModRevision, byte[] value) {
    return calls
        .await(
            kv.txn()
                .If(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.modRevision(expectedModRevision)))
                .Then(Op.put(bytes(key), bytes(value), PutOption.DEFAULT))
                .commit(),
            "compare-and-swap " + key + " at mod revision " + expectedModRevision)
        .isSucceeded();
  }

  @Override
  public boolean commitIfHeld(
      String fenceKey, long fenceCreateRevision, Map<String, byte[]> puts, List<String> deletes) {
    Objects.requireNonNull(puts, "puts");
    Objects.requireNonNull(deletes, "deletes");
    List<Op> ops = new ArrayList<>();
    puts.forEach((k, v) -> ops.add(Op.put(bytes(k), bytes(v), PutOption.DEFAULT)));
    deletes.forEach(k -> ops.add(Op.delete(bytes(k), DeleteOption.DEFAULT)));
    return calls
        .await(
            kv.txn()
                .If(
                    new Cmp(
                        bytes(fenceKey),
                        Cmp.Op.EQUAL,
                        CmpTarget.createRevision(fenceCreateRevision)))
                .Then(ops.toArray(Op[]::new))
                .commit(),
            "commit of "
                + puts.size()
                + " puts and "
                + deletes.size()
                + " deletes fenced on "
                + fenceKey)
        .isSucceeded();
  }

  @Override
  public boolean commitIfRevisions(
      Map<String, Long> modRevisions, Map<String, byte[]> puts, List<String> deletes) {
    List<Op> ops = new ArrayList<>();
    puts.forEach((k, v) -> ops.add(Op.put(bytes(k), bytes(v), PutOption.DEFAULT)));
    deletes.forEach(k -> ops.add(Op.delete(bytes(k), DeleteOption.DEFAULT)));
    List<Cmp> cmps = new ArrayList<>();
    modRevisions.forEach(
        (k, rev) -> cmps.add(new Cmp(bytes(k), Cmp.Op.EQUAL, CmpTarget.modRevision(rev))));
    return calls
        .await(
            kv.txn().If(cmps.toArray(Cmp[]::new)).Then(ops.toArray(Op[]::new)).commit(),
            "commit of "
                + puts.size()
                + " puts and "
                + deletes.size()
                + " deletes fenced on the revisions of "
                + modRevisions.keySet())
        .isSucceeded();
  }

  @Override
  public PrefixesRead getPrefixes(List<String> prefixes) {
    var txn = kv.txn();
    List<Op> gets = new ArrayList<>();
    for (String p : prefixes) {
      gets.add(Op.get(bytes(p), GetOption.builder().isPrefix(true).build()));
    }
    TxnResponse r =
        calls.await(txn.Then(gets.toArray(Op[]::new)).commit(), "get prefixes " + prefixes);
    Map<String, List<KeyValue>> out = new java.util.LinkedHashMap<>();
    List<GetResponse> answers = r.getGetResponses();
    for (int i = 0; i < prefixes.size(); i++) {
      out.put(
          prefixes.get(i), answers.get(i).getKvs().stream().map(EtcdCalls::toKeyValue).toList());
    }
    return new PrefixesRead(out, r.getHeader().getRevision());
  }

  @Override
  public boolean deleteIfCreatedAt(String key, long createRevision) {
    return calls
        .await(
            kv.txn()
                .If(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.createRevision(createRevision)))
                .Then(Op.delete(bytes(key), DeleteOption.DEFAULT))
                .commit(),
            "delete " + key)
        .isSucceeded();
  }

  @Override
  public void delete(String key) {
    calls.await(kv.delete(bytes(key)), "delete " + key);
  }

  @Override
  public AutoCloseable watchPrefix(String prefix, Consumer<WatchEvent> listener) {
    return watchPrefix(prefix, listener, () -> {});
  }

  @Override
  public AutoCloseable watchPrefix(String prefix, Consumer<WatchEvent> listener, Runnable onGap) {
    // Start right after the current revision, so every change after this call is seen even if
    // it lands before etcd has registered the watch.
    long now =
        calls
            .await(
                kv.get(
                    bytes(prefix), GetOption.builder().isPrefix(true).withCountOnly(true).build()),
                "watch " + prefix)
            .getHeader()
            .getRevision();
    return PrefixWatch.start(watch, prefix, now + 1, listener, onGap, scheduler);
  }

  /** Watches from a given revision (0: from now). */
  PrefixWatch watchPrefixFrom(String prefix, long revision, Consumer<WatchEvent> listener) {
    return watchPrefixFrom(prefix, revision, listener, () -> {});
  }

  /** {@link #watchPrefixFrom(String, long, Consumer)} telling {@code onGap} of lost events. */
  PrefixWatch watchPrefixFrom(
      String prefix, long revision, Consumer<WatchEvent> listener, Runnable onGap) {
    return PrefixWatch.start(watch, prefix, revision, listener, onGap, scheduler);
  }

  private static void requireAlive(Lease lease, String what) {
    Objects.requireNonNull(lease, "lease");
    if (!lease.isAlive()) {
      throw new CoordinationException(
          "cannot " + what + ": lease " + Long.toHexString(lease.id()) + " is revoked or lost");
    }
  }
}
