package dev.paramserver.pserver.grpc;

import com.google.protobuf.MessageLite;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The pserver's admission limits, one interceptor in front of every service:
 *
 * <ul>
 *   <li><b>calls</b>: unary (and server-streaming) calls in flight, from their headers to their
 *       close; one more is refused before its request is read (the transport drops its bytes).
 *   <li><b>bytes</b>: bytes of requests received (or being received) and not yet answered, over all
 *       calls: a unary call holds the bytes of its request really read so far ({@link
 *       ReceivedBytes}, as they come off the wire; without it the request's size once whole) until
 *       it closes; a request of a client stream (StreamPushes, MoveIn, Fill) until the service asks
 *       for the next one (it is done with it) or the call ends. A call whose bytes take the total
 *       past the limit while other calls hold some is refused at once, mid-request if need be, and
 *       gives its bytes back, unless it is the oldest unary call still being read: that one first
 *       refuses the calls being read that started after it, youngest first, and is refused itself
 *       only if the requests the service holds leave it no room. So a flood of large requests read
 *       side by side always lets the oldest through instead of refusing each in turn (eight
 *       clients' 60 MiB pushes against a 64 MiB limit were all refused on a loaded machine). A call
 *       that starts with the total at the limit is refused before its request is read. A request
 *       past the limit is never handed to the service: it is released ({@code unreferenced}) and
 *       the call closed. One request alone is always taken (the transport caps its size), and
 *       ordinary concurrency, many calls of ordinary size, holds far less than the limit: only a
 *       flood of large requests is refused.
 * </ul>
 *
 * Refusals are RESOURCE_EXHAUSTED with reason OVERLOADED and a retry hint ({@link
 * RpcErrors#overloaded}), counted by limit in {@link RefusalCounter}. Nothing was done for a
 * refused call, so a client may resend it as it was.
 */
public final class CallLimits implements ServerInterceptor {
  /** The limit names, as sent in ErrorInfo metadata {@code limit} and metric tag {@code reason}. */
  public static final String CALLS = "calls";

  public static final String BYTES = "bytes";

  private final int maxCalls;
  private final long maxQueuedBytes;
  private final Duration retryAfter;
  private final RefusalCounter refusals;
  private final Consumer<Object> unreferenced;
  private final AtomicInteger calls = new AtomicInteger();
  private final AtomicLong queuedBytes = new AtomicLong();
  // unary calls whose request is being read (not yet handed to the service nor refused), by the
  // order they started in
  private final AtomicLong started = new AtomicLong();
  private final ConcurrentSkipListMap<Long, Limited<?, ?>> reading = new ConcurrentSkipListMap<>();

  /**
   * @param unreferenced releases a request the service never receives (its bytes may be views of
   *     the transport's buffers)
   */
  public CallLimits(
      int maxCalls,
      long maxQueuedBytes,
      Duration retryAfter,
      RefusalCounter refusals,
      Consumer<Object> unreferenced) {
    if (maxCalls < 1 || maxQueuedBytes < 1) {
      throw new IllegalArgumentException(
          "call limits must be positive, got " + maxCalls + " calls, " + maxQueuedBytes + " bytes");
    }
    this.maxCalls = maxCalls;
    this.maxQueuedBytes = maxQueuedBytes;
    this.retryAfter = retryAfter;
    this.refusals = refusals;
    this.unreferenced = unreferenced;
  }

  /** Unary calls in flight now. */
  public int calls() {
    return calls.get();
  }

  /** Request bytes held now. */
  public long queuedBytes() {
    return queuedBytes.get();
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    MethodType type = call.getMethodDescriptor().getType();
    boolean counted = type.clientSendsOneMessage();
    if (counted && calls.incrementAndGet() > maxCalls) {
      calls.decrementAndGet();
      refuse(
          call,
          CALLS,
          "the pserver has "
              + maxCalls
              + " calls in flight (paramserver.pserver.limits.max-calls): retry after the hint");
      return new ServerCall.Listener<>() {};
    }
    if (counted && queuedBytes.get() >= maxQueuedBytes) {
      // the limit is reached by calls already admitted: refused before a byte of it is read
      calls.decrementAndGet();
      refuse(call, BYTES, bytesMessage());
      return new ServerCall.Listener<>() {};
    }
    Limited<Q, R> limited = new Limited<>(call, counted);
    if (counted) {
      ReceivedBytes.listen(limited::received);
    }
    ServerCall.Listener<Q> inner;
    try {
      inner = next.startCall(limited, headers);
    } catch (RuntimeException e) {
      limited.release();
      throw e;
    }
    return limited.listener(inner);
  }

  private void refuse(ServerCall<?, ?> call, String limit, String message) {
    refusals.refused(limit);
    StatusRuntimeException e = RpcErrors.overloaded(limit, message, retryAfter);
    Metadata trailers = e.getTrailers();
    call.close(e.getStatus(), trailers == null ? new Metadata() : trailers);
  }

  private String bytesMessage() {
    return "the pserver holds "
        + maxQueuedBytes
        + " bytes of requests received or being received and not yet answered"
        + " (paramserver.pserver.limits.max-queued-bytes): retry after the hint";
  }

  private static long sizeOf(Object message) {
    return message instanceof MessageLite m ? m.getSerializedSize() : 0;
  }

  /** One admitted call: what it holds of the limits, given back once. */
  private final class Limited<Q, R> extends SimpleForwardingServerCall<Q, R> {
    private final boolean counted;
    // the order it started in, among the unary calls (its key in reading)
    private final long order;
    // guarded by this: sizes of the requests received and not yet answered, oldest first
    private final ArrayDeque<Long> held = new ArrayDeque<>();
    // guarded by this
    private boolean released;
    // guarded by this: refused at the byte limit; nothing more reaches the service
    private boolean refused;
    // guarded by this: refused by an older call being read, not closed yet (closed on its thread)
    private boolean closePending;
    // guarded by this: a unary call's bytes (of its request read so far, then its request's size)
    private long reserved;

    Limited(ServerCall<Q, R> call, boolean counted) {
      super(call);
      this.counted = counted;
      this.order = started.incrementAndGet();
      if (counted) {
        reading.put(order, this);
      }
    }

    /**
     * A unary call's request bytes as the transport reads them (before the request is whole): held
     * from now on, and the call refused if they take the total past the limit while other calls
     * hold bytes too.
     */
    void received(long bytes) {
      if (isRefused()) {
        closeIfRefusedByAnother();
        return;
      }
      synchronized (this) {
        if (refused || released) {
          return;
        }
        reserved += bytes;
        long total = queuedBytes.addAndGet(bytes);
        if (total <= maxQueuedBytes || total <= reserved) {
          return;
        }
      }
      if (oldestReading() && makeRoom()) {
        return;
      }
      synchronized (this) {
        if (refused || released) {
          return;
        }
        refused = true;
      }
      refuse(delegate(), BYTES, bytesMessage());
      release();
    }

    private boolean oldestReading() {
      var first = reading.firstEntry();
      return first != null && first.getValue() == this;
    }

    /**
     * Refuses the calls being read that started after this one, youngest first, until the total is
     * back within the limit, if refusing them all would bring it there (none otherwise: what the
     * service holds leaves no room); true if the total is within the limit (or this call alone
     * holds bytes).
     */
    private boolean makeRoom() {
      long younger = 0;
      for (Limited<?, ?> c : reading.tailMap(order, false).values()) {
        younger += c.reservedNow();
      }
      if (queuedBytes.get() - younger > maxQueuedBytes) {
        return false;
      }
      for (Limited<?, ?> c : reading.tailMap(order, false).descendingMap().values()) {
        if (queuedBytes.get() <= maxQueuedBytes) {
          break;
        }
        c.refuseWhileReading();
      }
      long total = queuedBytes.get();
      synchronized (this) {
        return !refused && (total <= maxQueuedBytes || total <= reserved);
      }
    }

    /**
     * Refuses the call, on another call's thread, if its request is still being read (not handed to
     * the service): its bytes are given back at once, and the call is closed on its own thread at
     * its next event (more bytes, its request whole, its half-close), as gRPC's calls are not to be
     * closed from two threads.
     */
    private void refuseWhileReading() {
      synchronized (this) {
        // a call that holds nothing yet frees nothing
        if (refused || released || reserved == 0 || reading.get(order) != this) {
          return;
        }
        refused = true;
        closePending = true;
      }
      release();
    }

    private synchronized long reservedNow() {
      return refused || released ? 0 : reserved;
    }

    /** Closes the call refused by an older one ({@link #refuseWhileReading}), once. */
    private void closeIfRefusedByAnother() {
      synchronized (this) {
        if (!closePending) {
          return;
        }
        closePending = false;
      }
      refuse(delegate(), BYTES, bytesMessage());
    }

    ServerCall.Listener<Q> listener(ServerCall.Listener<Q> inner) {
      return new SimpleForwardingServerCallListener<>(inner) {
        @Override
        public void onMessage(Q message) {
          if (!admit(message)) {
            unreferenced.accept(message);
            return;
          }
          super.onMessage(message);
        }

        @Override
        public void onHalfClose() {
          if (!isRefused()) {
            super.onHalfClose();
          } else {
            closeIfRefusedByAnother();
          }
        }

        @Override
        public void onCancel() {
          release();
          super.onCancel();
        }

        @Override
        public void onComplete() {
          release();
          super.onComplete();
        }
      };
    }

    private boolean admit(Object message) {
      long size = sizeOf(message);
      if (isRefused()) {
        closeIfRefusedByAnother();
        return false;
      }
      synchronized (this) {
        if (refused || released) {
          return !refused;
        }
        if (counted) {
          // what it read so far (all of it, or nothing without a tracer) becomes its size
          long total = queuedBytes.addAndGet(size - reserved);
          reserved = size;
          // handed to the service or refused: no longer refused by an older call being read
          reading.remove(order);
          if (total <= maxQueuedBytes || total <= size) {
            return true;
          }
          refused = true;
        } else if (queuedBytes.addAndGet(size) > maxQueuedBytes && queuedBytes.get() > size) {
          // one request alone is always admitted (the transport caps its size): an idle server
          // must take the largest request a client may send
          queuedBytes.addAndGet(-size);
          refused = true;
        } else {
          held.addLast(size);
          return true;
        }
      }
      refuse(delegate(), BYTES, bytesMessage());
      release();
      return false;
    }

    private synchronized boolean isRefused() {
      return refused;
    }

    /**
     * A streaming call's service asks for the next request once it is done with the ones before
     * (PushStream: once it answered; automatic flow control: once {@code onMessage} returned):
     * their bytes are no longer held for it.
     */
    @Override
    public void request(int numMessages) {
      if (!counted) {
        synchronized (this) {
          for (int i = 0; i < numMessages && !held.isEmpty(); i++) {
            queuedBytes.addAndGet(-held.pollFirst());
          }
        }
      }
      super.request(numMessages);
    }

    @Override
    public void close(Status status, Metadata trailers) {
      release();
      super.close(status, trailers);
    }

    void release() {
      synchronized (this) {
        if (released) {
          return;
        }
        released = true;
        if (counted) {
          reading.remove(order);
        }
        long total = reserved;
        reserved = 0;
        for (long size : held) {
          total += size;
        }
        held.clear();
        queuedBytes.addAndGet(-total);
      }
      if (counted) {
        calls.decrementAndGet();
      }
    }
  }
}
