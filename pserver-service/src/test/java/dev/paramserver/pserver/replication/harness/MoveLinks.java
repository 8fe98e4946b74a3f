package dev.paramserver.pserver.replication.harness;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;

/**
 * The links between the move simulation's processes (the coordinator, the pservers, the trainers),
 * cut by its nemesis: a process partitioned both ways neither sends nor receives anything (what a
 * call sends while either end is cut is lost; its answer too, and the call fails with UNAVAILABLE
 * when it ends, at the latest at its deadline); a process partitioned one way receives every
 * request but its replies are lost (and so are the replies to its own calls). The rules hold for
 * calls under way too: a stream cut in its middle loses what follows. Each call also goes through
 * its caller's {@link SimulationNetwork} (latency, random faults, no server listening).
 *
 * <p>A stream's sender is told now and then (a third of the time, drawn from the seed) that the
 * stream takes no more data yet (gRPC's {@code isReady}, flow control): a sender that waits for it
 * (the old owner's MoveIn) parks there, and the scheduler runs other threads meanwhile, as they
 * would run in parallel in a real process. Without it a MoveIn's cut, copy and freeze would run in
 * one step, and no push could land between the cut and the freeze.
 */
final class MoveLinks {
  // Guarded by this: processes (by name) cut both ways, and those whose replies are lost.
  private final Set<String> cut = new HashSet<>();
  private final Set<String> oneWay = new HashSet<>();

  synchronized void partition(String process) {
    cut.add(process);
  }

  synchronized void loseReplies(String process) {
    oneWay.add(process);
  }

  synchronized void heal(String process) {
    cut.remove(process);
    oneWay.remove(process);
  }

  synchronized void healAll() {
    cut.clear();
    oneWay.clear();
  }

  /** Whether a request from {@code from} reaches {@code to} now. */
  synchronized boolean passes(String from, String to) {
    return !cut.contains(from) && !cut.contains(to);
  }

  /** Whether a reply of {@code to} to {@code from} reaches it now. */
  synchronized boolean answers(String from, String to) {
    return passes(from, to) && !oneWay.contains(from) && !oneWay.contains(to);
  }

  /**
   * The calls of process {@code from}, through its {@code network}; {@code seed} draws readiness,
   * on the time of {@code sim}.
   */
  From from(String from, SimulationNetwork network, long seed, SimulationScheduler sim) {
    return new From(from, network, seed, sim);
  }

  /** A process's side of the links: the interceptor of its channel to each address. */
  final class From implements ClientInterceptor {
    private final String from;
    private final SimulationNetwork network;
    private final Random ready;
    private final SimulationScheduler sim;

    From(String from, SimulationNetwork network, long seed, SimulationScheduler sim) {
      this.from = from;
      this.network = network;
      this.ready = new Random(seed);
      this.sim = sim;
    }

    /**
     * Whether a stream that is ready says so now (see the class's javadoc); {@code until} holds the
     * end of its current stall.
     */
    private boolean readyNow(long[] until) {
      synchronized (ready) {
        if (sim.now() < until[0]) {
          return false;
        }
        if (ready.nextInt(3) != 0) {
          return true;
        }
        until[0] = sim.now() + 1 + ready.nextInt(30_000_000);
        return false;
      }
    }

    /**
     * The interceptor of a channel to {@code address}: a pserver process's name, a dash and a
     * number unique in the JVM ({@link MovePserver#address}).
     */
    ClientInterceptor to(String address) {
      ClientInterceptor net = network.to(address);
      String process = address.substring(0, address.lastIndexOf('-'));
      return new ClientInterceptor() {
        @Override
        public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
            MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
          return new Cut<>(net.interceptCall(method, options, next), process);
        }
      };
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
        MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
      throw new IllegalStateException("a channel of the move simulation is made for an address");
    }

    /** A call that loses what the links lose while it runs. */
    private final class Cut<ReqT, RespT>
        extends ForwardingClientCall.SimpleForwardingClientCall<ReqT, RespT> {
      private final String to;
      private final long[] stalledUntil = {0};

      Cut(ClientCall<ReqT, RespT> delegate, String to) {
        super(delegate);
        this.to = to;
      }

      @Override
      public void start(Listener<RespT> listener, Metadata headers) {
        super.start(
            new ForwardingClientCallListener.SimpleForwardingClientCallListener<RespT>(listener) {
              @Override
              public void onHeaders(Metadata h) {
                if (answers(from, to)) {
                  super.onHeaders(h);
                }
              }

              @Override
              public void onMessage(RespT message) {
                if (answers(from, to)) {
                  super.onMessage(message);
                }
              }

              @Override
              public void onClose(Status status, Metadata trailers) {
                if (answers(from, to)) {
                  super.onClose(status, trailers);
                } else {
                  super.onClose(
                      Status.UNAVAILABLE.withDescription(
                          "simulation: the link between " + from + " and " + to + " is cut"),
                      new Metadata());
                }
              }
            },
            headers);
      }

      @Override
      public void sendMessage(ReqT message) {
        if (passes(from, to)) {
          super.sendMessage(message);
        }
      }

      @Override
      public boolean isReady() {
        return super.isReady() && readyNow(stalledUntil);
      }

      @Override
      public void halfClose() {
        if (passes(from, to)) {
          super.halfClose();
        }
      }
    }
  }
}
