package dev.paramserver.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits for jetcd futures with the call timeout, turns failures into {@link CoordinationException}s
 * that name the operation, and tracks whether etcd answered lately.
 */
final class EtcdCalls {
  private static final Logger log = LoggerFactory.getLogger(EtcdCalls.class);

  private final Duration timeout;
  private final List<String> endpoints;
  private final AtomicBoolean connected = new AtomicBoolean(false);
  private volatile CallObserver observer = CallObserver.NONE;

  EtcdCalls(Duration timeout, List<String> endpoints) {
    this.timeout = timeout;
    this.endpoints = endpoints;
  }

  Duration timeout() {
    return timeout;
  }

  void observer(CallObserver observer) {
    this.observer = observer == null ? CallObserver.NONE : observer;
  }

  boolean isConnected() {
    return connected.get();
  }

  /**
   * Waits for the future up to the call timeout.
   *
   * @param what the operation and key, for messages ("put /paramserver/j/ps/0")
   */
  <T> T await(CompletableFuture<T> future, String what) {
    long start = System.nanoTime();
    boolean success = false;
    try {
      T result = future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      markConnected(true, null);
      success = true;
      return result;
    } catch (TimeoutException e) {
      future.cancel(true);
      markConnected(false, "timeout");
      throw new CoordinationException(
          "etcd "
              + what
              + " timed out after "
              + timeout
              + ": is etcd at "
              + endpoints
              + " up and reachable?",
          e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      boolean answered = serverAnswered(cause);
      markConnected(answered, answered ? null : String.valueOf(cause.getMessage()));
      throw new CoordinationException("etcd " + what + " failed: " + cause.getMessage(), cause);
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new CoordinationException("interrupted while waiting for etcd " + what, e);
    } finally {
      observe(what, System.nanoTime() - start, success);
    }
  }

  private void observe(String what, long nanos, boolean success) {
    CallObserver o = observer;
    if (o == CallObserver.NONE) {
      return;
    }
    try {
      o.onCall(operationOf(what), nanos, success);
    } catch (RuntimeException e) {
      log.warn("etcd call observer failed on {}", what, e);
    }
  }

  /** The fixed operation name of a call description ("get prefix /a/b" -> "get-prefix"). */
  static String operationOf(String what) {
    String[] words = what.split(" ", 3);
    String op = words[0];
    if (words.length > 1 && (op.equals("lease") || words[1].equals("prefix"))) {
      op = op + "-" + words[1];
    }
    return op;
  }

  /** Records the outcome of a call made without {@link #await}. */
  void markConnected(boolean ok, String why) {
    boolean was = connected.getAndSet(ok);
    if (was != ok) {
      if (ok) {
        log.info("etcd at {} is reachable", endpoints);
      } else {
        log.warn("etcd at {} is unreachable ({})", endpoints, why);
      }
    }
  }

  /** True if the error came from etcd itself (it answered), false for transport problems. */
  static boolean serverAnswered(Throwable error) {
    if (isLeaseNotFound(error)) {
      return true; // etcd answered: the call's lease has ended (not a sign of an unreachable etcd)
    }
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof TimeoutException) {
        return false;
      }
      if (t instanceof EtcdException etcd) {
        return switch (etcd.getErrorCode()) {
          case NOT_FOUND,
              ALREADY_EXISTS,
              PERMISSION_DENIED,
              UNAUTHENTICATED,
              INVALID_ARGUMENT,
              FAILED_PRECONDITION,
              OUT_OF_RANGE,
              RESOURCE_EXHAUSTED ->
              true;
          default -> false;
        };
      }
    }
    return false;
  }

  /** True if the error says the lease is unknown to etcd. */
  static boolean isNotFound(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof EtcdException etcd && etcd.getErrorCode() == ErrorCode.NOT_FOUND) {
        return true;
      }
    }
    return false;
  }

  /**
   * True if etcd refused a call because it does not know the lease the call named (expired or
   * revoked: {@code etcdserver: requested lease not found}, which arrives as a gRPC NOT_FOUND
   * status or as jetcd's {@link EtcdException}).
   */
  static boolean isLeaseNotFound(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && m.contains("requested lease not found")) {
        return true;
      }
    }
    return isNotFound(error);
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  static ByteSequence bytes(byte[] b) {
    return ByteSequence.from(b);
  }

  static KeyValueStore.KeyValue toKeyValue(KeyValue kv) {
    return new KeyValueStore.KeyValue(
        kv.getKey().toString(StandardCharsets.UTF_8),
        kv.getValue().getBytes(),
        kv.getCreateRevision(),
        kv.getModRevision(),
        kv.getLease());
  }
}
