package dev.paramserver.pserver.replication.harness;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The network between a primary and its backup, as a client interceptor on the primary's channel:
 * the n-th call of each method (Replicate, Fill) meets the n-th fault of that method's plan (none
 * once the plan is used up). A call is passed, delayed, held (released together with the calls held
 * after it, in a shuffled order: they reach the backup out of order), dropped before it reaches the
 * backup, or delivered with its reply lost; the last two fail with UNAVAILABLE, as a broken
 * connection does.
 */
final class FaultyNetwork implements ClientInterceptor, AutoCloseable {

  /** What happens to one call. */
  enum Kind {
    PASS,
    DELAY,
    HOLD,
    DROP,
    LOSE_REPLY
  }

  /**
   * One call's fault.
   *
   * @param millis DELAY: how long; HOLD: the longest it is held waiting for others to reorder it
   *     with
   */
  record Fault(Kind kind, int millis) {
    static final Fault PASS = new Fault(Kind.PASS, 0);

    @Override
    public String toString() {
      return kind == Kind.DELAY || kind == Kind.HOLD ? kind + "(" + millis + ")" : kind.toString();
    }
  }

  private final Map<String, List<Fault>> plans;
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final Map<Kind, AtomicInteger> met = new ConcurrentHashMap<>();
  private final int holdBatch;
  private final Random random;
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "harness-network");
            t.setDaemon(true);
            return t;
          });
  // Guarded by this: the calls held now, released together.
  private List<FaultyCall<?, ?>> held = new ArrayList<>();
  private volatile boolean healed;
  private volatile boolean cut;
  private final AtomicInteger reordered = new AtomicInteger();
  // By method: the calls made that neither reached the server nor failed yet.
  private final Map<String, ConcurrentSkipListSet<Integer>> unsent = new ConcurrentHashMap<>();
  // By method: the next call is captured rather than sent (see holdNext).
  private final Map<String, Captured> captures = new ConcurrentHashMap<>();

  /**
   * @param plans the faults of each method's calls, by bare method name ("Replicate", "Fill")
   * @param holdBatch held calls are released once this many are held (or the first one's time is
   *     up)
   * @param seed orders the release of held calls
   */
  FaultyNetwork(Map<String, List<Fault>> plans, int holdBatch, long seed) {
    this.plans = Map.copyOf(plans);
    this.holdBatch = Math.max(1, holdBatch);
    this.random = new Random(seed);
  }

  /** A network that passes every call. */
  static FaultyNetwork reliable() {
    return new FaultyNetwork(Map.of(), 1, 0);
  }

  /** From now on every call passes (the rest of the plans is skipped); held calls are released. */
  void heal() {
    healed = true;
    cut = false;
    releaseHeld();
  }

  /** From now on every call is dropped (a black hole), until {@link #heal}. */
  void cut() {
    cut = true;
  }

  /** How many calls reached the server before a call of their method made earlier. */
  int reordered() {
    return reordered.get();
  }

  /** How many calls met a fault of {@code kind}, for statistics. */
  int met(Kind kind) {
    AtomicInteger n = met.get(kind);
    return n == null ? 0 : n.get();
  }

  /**
   * The next call of {@code method} (a bare method name) is captured: it neither reaches the server
   * nor fails until the test says so ({@link Captured}), as a request stuck in the network.
   */
  Captured holdNext(String method) {
    Captured c = new Captured();
    captures.put(method, c);
    return c;
  }

  /**
   * A call {@link #holdNext} captured: its messages as the client sent them. The caller sees it
   * fail only on {@link #failCaller}; the test delivers the messages itself, late, to a server.
   */
  static final class Captured {
    private final java.util.concurrent.CompletableFuture<FaultyCall<?, ?>> call =
        new java.util.concurrent.CompletableFuture<>();

    /** True once the call was made and the client sent all of it (half-closed). */
    boolean holding() {
      FaultyCall<?, ?> c = call.getNow(null);
      if (c == null) {
        return false;
      }
      synchronized (c) {
        return c.halfClosed;
      }
    }

    /** The messages the client sent on the call. */
    List<Object> messages() {
      FaultyCall<?, ?> c = call.join();
      synchronized (c) {
        return List.copyOf(c.messages);
      }
    }

    /** The caller sees the call fail (UNAVAILABLE, a broken connection); the request lives on. */
    void failCaller() {
      call.join().fail(Status.UNAVAILABLE.withDescription("harness: connection broken mid-call"));
    }
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
    String name = method.getBareMethodName();
    int n = calls.computeIfAbsent(name, k -> new AtomicInteger()).getAndIncrement();
    List<Fault> plan = plans.getOrDefault(name, List.of());
    Fault fault =
        cut ? new Fault(Kind.DROP, 0) : healed || n >= plan.size() ? Fault.PASS : plan.get(n);
    met.computeIfAbsent(fault.kind(), k -> new AtomicInteger()).incrementAndGet();
    Set<Integer> pending = this.unsent.computeIfAbsent(name, k -> new ConcurrentSkipListSet<>());
    pending.add(n);
    FaultyCall<ReqT, RespT> call =
        new FaultyCall<>(this, fault, () -> next.newCall(method, options), () -> sent(name, n));
    Captured captured = captures.remove(name);
    if (captured != null) {
      call.captured = true;
      captured.call.complete(call);
    }
    return call;
  }

  /** Call {@code n} of {@code method} reached the server, or failed without reaching it. */
  private void sent(String method, int n) {
    ConcurrentSkipListSet<Integer> unsent = this.unsent.get(method);
    if (unsent.first() < n) {
      reordered.incrementAndGet();
    }
    unsent.remove(n);
  }

  private void hold(FaultyCall<?, ?> call) {
    boolean full;
    synchronized (this) {
      held.add(call);
      full = held.size() >= holdBatch;
    }
    if (full || healed) {
      releaseHeld();
    } else {
      timer.schedule(this::releaseHeld, call.fault.millis(), TimeUnit.MILLISECONDS);
    }
  }

  /** Releases every call held now, in a shuffled order. */
  private void releaseHeld() {
    List<FaultyCall<?, ?>> batch;
    synchronized (this) {
      batch = held;
      held = new ArrayList<>();
      Collections.shuffle(batch, random);
    }
    batch.forEach(FaultyCall::release);
  }

  private void later(Runnable r, long millis) {
    timer.schedule(r, millis, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    heal();
    timer.shutdown();
  }

  /**
   * A call that buffers what the client does until its fault lets it through, then replays it on
   * the real call.
   */
  private static final class FaultyCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private final FaultyNetwork network;
    private final Fault fault;
    private final Supplier<ClientCall<ReqT, RespT>> real;
    private final Runnable onSent;
    // Guarded by this.
    private Listener<RespT> listener;
    private Metadata headers;
    private int requested;
    private final List<ReqT> messages = new ArrayList<>();
    private boolean halfClosed;
    private boolean finished;
    private ClientCall<ReqT, RespT> delegate;
    // Captured (see holdNext): never released, its messages kept for the test.
    private boolean captured;

    FaultyCall(
        FaultyNetwork network,
        Fault fault,
        Supplier<ClientCall<ReqT, RespT>> real,
        Runnable onSent) {
      this.network = network;
      this.fault = fault;
      this.real = real;
      this.onSent = onSent;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata metadata) {
      synchronized (this) {
        listener =
            fault.kind() == Kind.LOSE_REPLY ? new LostReply<>(responseListener) : responseListener;
        headers = metadata;
      }
      if (captured) {
        return;
      }
      switch (fault.kind()) {
        case PASS, LOSE_REPLY -> release();
        case DELAY -> network.later(this::release, fault.millis());
        case HOLD -> network.hold(this);
        case DROP ->
            network.later(
                () -> fail(Status.UNAVAILABLE.withDescription("harness: call dropped")), 0);
      }
    }

    /** Ends the call with {@code status} without it reaching the server (once). */
    private void fail(Status status) {
      Listener<RespT> l;
      synchronized (this) {
        if (finished || delegate != null) {
          return;
        }
        finished = true;
        l = listener;
        onSent.run();
      }
      l.onClose(status, new Metadata());
    }

    /** Starts the real call and replays what the client did so far. */
    void release() {
      synchronized (this) {
        if (finished || delegate != null) {
          return;
        }
        onSent.run();
        delegate = real.get();
        delegate.start(listener, headers);
        if (requested > 0) {
          delegate.request(requested);
        }
        messages.forEach(delegate::sendMessage);
        messages.clear();
        if (halfClosed) {
          delegate.halfClose();
        }
      }
    }

    @Override
    public synchronized void request(int numMessages) {
      if (delegate != null) {
        delegate.request(numMessages);
      } else {
        requested += numMessages;
      }
    }

    @Override
    public void cancel(String message, Throwable cause) {
      ClientCall<ReqT, RespT> d;
      synchronized (this) {
        d = delegate;
      }
      if (d != null) {
        d.cancel(message, cause);
      } else {
        fail(Status.CANCELLED.withDescription(message).withCause(cause));
      }
    }

    @Override
    public synchronized void halfClose() {
      if (delegate != null) {
        delegate.halfClose();
      } else {
        halfClosed = true;
      }
    }

    @Override
    public synchronized void sendMessage(ReqT message) {
      if (delegate != null) {
        delegate.sendMessage(message);
      } else if (!finished) {
        messages.add(message);
      }
    }

    @Override
    public synchronized boolean isReady() {
      return delegate == null || delegate.isReady();
    }
  }

  /** Lets the call run on the server and replaces its reply with UNAVAILABLE. */
  private static final class LostReply<RespT>
      extends ForwardingClientCallListener.SimpleForwardingClientCallListener<RespT> {
    LostReply(ClientCall.Listener<RespT> delegate) {
      super(delegate);
    }

    @Override
    public void onHeaders(Metadata headers) {}

    @Override
    public void onMessage(RespT message) {}

    @Override
    public void onClose(Status status, Metadata trailers) {
      super.onClose(
          Status.UNAVAILABLE.withDescription("harness: reply lost (server said " + status + ")"),
          new Metadata());
    }
  }
}
