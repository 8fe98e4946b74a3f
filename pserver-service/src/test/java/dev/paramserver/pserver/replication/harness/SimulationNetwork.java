package dev.paramserver.pserver.replication.harness;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The simulated network out of one pserver, as a client interceptor on its channels: every call is
 * delivered after a latency drawn from the seed (so calls reorder), some much later than the
 * replication timeout, some dropped, some delivered with their reply lost; and the link can be
 * partitioned both ways (nothing passes) or one way (requests pass, replies are lost). Deadlines
 * run on the simulated clock from the moment the call is made.
 *
 * <p>A call to an address where no server listens (a crashed pserver's) is refused by this network,
 * never handed to the channel: a channel that failed to connect retries after a backoff that gRPC
 * draws from an unseeded random, which would time the run's next steps off the seed.
 */
final class SimulationNetwork implements ClientInterceptor {
  private final SimulationScheduler sim;
  private final String node;
  private final Random random;
  private final long timeoutNanos;
  private final int faultPercent;
  private final Predicate<String> listening;
  private volatile boolean partitioned;
  private volatile boolean repliesLost;

  /**
   * @param node the pserver whose calls these are (their timers run as its threads)
   * @param seed draws each call's latency and fault
   * @param timeoutNanos the replication timeout: a slow call takes a half to twice as long
   * @param faultPercent the share of calls that meet a fault (slow, dropped, reply lost)
   * @param listening whether a server listens at an address (a pserver's name) now
   */
  SimulationNetwork(
      SimulationScheduler sim,
      String node,
      long seed,
      long timeoutNanos,
      int faultPercent,
      Predicate<String> listening) {
    this.sim = sim;
    this.listening = listening;
    this.node = node;
    this.random = new Random(seed);
    this.timeoutNanos = timeoutNanos;
    this.faultPercent = faultPercent;
  }

  /** Nothing passes (both ways) until {@link #heal}. */
  void partition() {
    partitioned = true;
  }

  /** Requests pass, every reply is lost (a one-way partition) until {@link #heal}. */
  void loseReplies() {
    repliesLost = true;
  }

  /** The link works again (faults drawn per call go on). */
  void heal() {
    partitioned = false;
    repliesLost = false;
  }

  private enum Fate {
    PASS,
    SLOW,
    DROP,
    LOSE_REPLY
  }

  /**
   * This network on the channels to {@code address}: calls there are refused while none listens.
   */
  ClientInterceptor to(String address) {
    return new ClientInterceptor() {
      @Override
      public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
          MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
        return SimulationNetwork.this.interceptCall(method, options, next, address);
      }
    };
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
    return interceptCall(method, options, next, null);
  }

  private <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next, String address) {
    Fate fate;
    long latency;
    synchronized (this) {
      int roll = random.nextInt(100);
      latency = TimeUnit.MICROSECONDS.toNanos(50 + random.nextInt(2000));
      if (partitioned) {
        fate = Fate.DROP;
      } else if (repliesLost) {
        fate = Fate.LOSE_REPLY;
      } else if (roll >= faultPercent) {
        fate = Fate.PASS;
      } else {
        fate = Fate.values()[1 + roll % 3];
      }
      if (fate == Fate.SLOW) {
        latency = timeoutNanos / 2 + (long) (random.nextDouble() * 1.5 * timeoutNanos);
      }
    }
    sim.record(
        fate.ordinal() * 31L + latency,
        node + " calls " + method.getFullMethodName() + ": " + fate + " after " + latency + " ns");
    // The deadline runs on the simulated clock from now: the caller took it from the simulation's
    // ReplicationClock (deadlineAfter), so what remains of it is simulated time, exact. A deadline
    // on the real clock (withDeadlineAfter) would leak the real time spent since it was made.
    Deadline deadline = options.getDeadline();
    long deadlineNanos = -1;
    if (deadline != null) {
      if (!onSimulatedClock(deadline)) {
        sim.leak(
            node
                + " calls "
                + method.getFullMethodName()
                + " with a deadline on the real clock: take it from ReplicationClock.deadlineAfter");
      }
      deadlineNanos = Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS));
    }
    sim.record(
        deadlineNanos, node + " calls " + method.getFullMethodName() + " with a deadline of");
    return new DelayedCall<>(
        this, fate, latency, deadlineNanos, method, options.withDeadline(null), next, address);
  }

  /**
   * Whether {@code deadline} was made with the scheduler's ticker (gRPC refuses to compare else).
   */
  private boolean onSimulatedClock(Deadline deadline) {
    try {
      // gRPC compares deadlines of one ticker only: an AssertionError says it is another's
      int unused = deadline.compareTo(Deadline.after(0, TimeUnit.NANOSECONDS, sim.ticker()));
      return true;
    } catch (AssertionError e) {
      return false;
    }
  }

  /** A call that reaches the server after its latency, with what the client did meanwhile. */
  private static final class DelayedCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private final SimulationNetwork network;
    private final Fate fate;
    private final long latency;
    private final long deadlineNanos;
    private final MethodDescriptor<ReqT, RespT> method;
    private final CallOptions options;
    private final Channel next;
    // where the channel leads (null: anywhere, never refused)
    private final String address;
    // Guarded by this.
    private Listener<RespT> listener;
    private Metadata headers;
    private int requested;
    private final List<ReqT> messages = new ArrayList<>();
    private boolean halfClosed;
    private boolean finished;
    private ClientCall<ReqT, RespT> delegate;

    DelayedCall(
        SimulationNetwork network,
        Fate fate,
        long latency,
        long deadlineNanos,
        MethodDescriptor<ReqT, RespT> method,
        CallOptions options,
        Channel next,
        String address) {
      this.network = network;
      this.address = address;
      this.fate = fate;
      this.latency = latency;
      this.deadlineNanos = deadlineNanos;
      this.method = method;
      this.options = options;
      this.next = next;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata metadata) {
      synchronized (this) {
        listener = fate == Fate.LOSE_REPLY ? new LostReply<>(responseListener) : responseListener;
        headers = metadata;
      }
      SimulationScheduler sim = network.sim;
      if (deadlineNanos >= 0) {
        sim.schedule(
            network.node,
            deadlineNanos,
            () -> end(Status.DEADLINE_EXCEEDED.withDescription("simulated deadline")));
      }
      if (fate == Fate.DROP) {
        sim.schedule(
            network.node,
            latency,
            () -> fail(Status.UNAVAILABLE.withDescription("simulation: call dropped")));
      } else {
        sim.schedule(network.node, latency, this::release);
      }
    }

    /** The deadline passed: the call fails (cancelled on the server if it got there). */
    private void end(Status status) {
      ClientCall<ReqT, RespT> d;
      synchronized (this) {
        d = delegate;
      }
      if (d != null) {
        d.cancel(status.getDescription(), null);
      } else {
        fail(status);
      }
    }

    private void fail(Status status) {
      Listener<RespT> l;
      synchronized (this) {
        if (finished || delegate != null) {
          return;
        }
        finished = true;
        l = listener;
      }
      l.onClose(status, new Metadata());
    }

    private void release() {
      if (address != null && !network.listening.test(address)) {
        fail(Status.UNAVAILABLE.withDescription("simulation: no server listens at " + address));
        return;
      }
      ClientCall<ReqT, RespT> d;
      synchronized (this) {
        if (finished || delegate != null) {
          return;
        }
        d = next.newCall(method, options);
        delegate = d;
      }
      d.start(listener, headers);
      List<ReqT> sent;
      boolean close;
      int asked;
      synchronized (this) {
        asked = requested;
        sent = List.copyOf(messages);
        messages.clear();
        close = halfClosed;
      }
      if (asked > 0) {
        d.request(asked);
      }
      sent.forEach(d::sendMessage);
      if (close) {
        d.halfClose();
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
          Status.UNAVAILABLE.withDescription("simulation: reply lost (server said " + status + ")"),
          new Metadata());
    }
  }
}
