package dev.paramserver.etcd;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/** Keys and values in the coordination store. Every call has the coordinator's timeout. */
public interface KeyValueStore {

  Optional<KeyValue> get(String key);

  /** Every key starting with {@code prefix}, in key order. */
  List<KeyValue> getPrefix(String prefix);

  /** Puts a key with no lease; returns the store revision of the write. */
  long put(String key, byte[] value);

  /** Puts a key that is deleted when the lease ends. */
  long put(String key, byte[] value, Lease lease);

  /** Creates the key under the lease only if it does not exist; true if this call created it. */
  boolean putIfAbsent(String key, byte[] value, Lease lease);

  /**
   * Writes the key only if its modification revision is {@code expectedModRevision} (0: only if the
   * key does not exist). True if written.
   */
  boolean compareAndSwap(String key, long expectedModRevision, byte[] value);

  /**
   * Applies the puts and deletes atomically, only if {@code fenceKey} still exists with create
   * revision {@code fenceCreateRevision} (the caller still holds what that key stands for, for
   * example leadership). True if applied.
   */
  boolean commitIfHeld(
      String fenceKey, long fenceCreateRevision, Map<String, byte[]> puts, List<String> deletes);

  /**
   * Applies the puts and deletes atomically, only if every key of {@code modRevisions} still has
   * that modification revision (0: the key does not exist). True if applied.
   */
  default boolean commitIfRevisions(
      Map<String, Long> modRevisions, Map<String, byte[]> puts, List<String> deletes) {
    throw new UnsupportedOperationException(
        getClass().getSimpleName() + " does not do revision-fenced transactions");
  }

  void delete(String key);

  /**
   * Deletes the key only if it still has the given create revision (it was not deleted and made
   * again meanwhile). True if deleted. The default reads, then deletes: not atomic; the etcd store
   * does it in one transaction.
   */
  default boolean deleteIfCreatedAt(String key, long createRevision) {
    Optional<KeyValue> now = get(key);
    if (now.isEmpty() || now.get().createRevision() != createRevision) {
      return false;
    }
    delete(key);
    return true;
  }

  /**
   * Every key under each of the prefixes, in key order, all read at one store revision. The default
   * reads the prefixes one after the other and reports the highest modification revision seen; the
   * etcd store reads them in one transaction and reports the store's revision.
   */
  default PrefixesRead getPrefixes(List<String> prefixes) {
    Map<String, List<KeyValue>> out = new java.util.LinkedHashMap<>();
    long revision = 0;
    for (String p : prefixes) {
      List<KeyValue> kvs = getPrefix(p);
      out.put(p, kvs);
      for (KeyValue kv : kvs) {
        revision = Math.max(revision, kv.modRevision());
      }
    }
    return new PrefixesRead(out, revision);
  }

  /** The keys under several prefixes (by prefix, in the order asked) at one store revision. */
  record PrefixesRead(Map<String, List<KeyValue>> byPrefix, long revision) {
    /** The keys under {@code prefix} (empty when none, or when it was not asked for). */
    public List<KeyValue> under(String prefix) {
      return byPrefix.getOrDefault(prefix, List.of());
    }
  }

  /**
   * Watches every key under the prefix; the listener sees each change after this call. Closing the
   * returned handle stops the watch.
   *
   * <p>The watch survives etcd restarts and lost connections: it resumes after the last event seen,
   * so nothing is lost or repeated. Only if etcd compacted that revision away meanwhile does it
   * restart from the current revision (events in between are lost and a warning is logged);
   * listeners that must not miss a state should re-read the prefix after a reconnection. The
   * listener runs on the client's event thread: keep it quick and never call etcd from it
   * synchronously.
   */
  AutoCloseable watchPrefix(String prefix, Consumer<WatchEvent> listener);

  /**
   * {@link #watchPrefix(String, Consumer)}, and {@code onGap} runs (on the client's event thread,
   * so it must not call etcd synchronously) each time events may have been lost: the watch had to
   * restart from the current revision because the one it was at was compacted. A listener that
   * keeps state from the events re-reads the prefix then. Stores that never lose events ignore it.
   */
  default AutoCloseable watchPrefix(String prefix, Consumer<WatchEvent> listener, Runnable onGap) {
    return watchPrefix(prefix, listener);
  }

  /** A key's value and revisions. */
  record KeyValue(String key, byte[] value, long createRevision, long modRevision, long leaseId) {
    public String valueAsString() {
      return new String(value, StandardCharsets.UTF_8);
    }
  }

  /** A change to a watched key. For DELETE the value is empty. */
  record WatchEvent(Type type, KeyValue keyValue) {
    public enum Type {
      PUT,
      DELETE
    }
  }
}
