package dev.paramserver.coordination;

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

  void delete(String key);

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
