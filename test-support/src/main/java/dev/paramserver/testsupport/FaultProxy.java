package dev.paramserver.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy on 127.0.0.1 between two processes (a trainer and a pserver, a pserver and etcd, a
 * primary and its backup, a master and etcd), with faults on command. Give one side the proxy's
 * port instead of the other side's ({@link #target(int)}): as its etcd endpoint ({@link
 * #endpoint()}) or as the port another process advertises.
 *
 * <ul>
 *   <li>{@link #cut(Duration)}: closes every open connection (both sides see a reset or an end of
 *       stream) and refuses new ones for a while;
 *   <li>{@link #blackHole()}: a partition: connections stay open and new ones are accepted, but no
 *       byte goes through in either direction until {@link #heal()} (what was held is then
 *       delivered, in order, as TCP does once a partition ends);
 *   <li>{@link #blackHoleTowardsTarget()}, {@link #blackHoleTowardsClient()}: a one-way partition,
 *       holding only the bytes sent one way (requests, or answers) until {@link #heal()};
 *   <li>{@link #delay(Duration)}: every chunk of bytes waits that long before it is forwarded;
 *   <li>{@link #halfClose()}: every open connection's direction towards the client ends (it reads
 *       an end of stream) while what it sends still reaches the target.
 * </ul>
 */
public final class FaultProxy extends LoopbackProxy {
  private final Object gate = new Object();
  private final AtomicLong accepted = new AtomicLong();
  private volatile int target;
  private volatile long refuseUntilNanos;
  private volatile boolean holdTowardsTarget;
  private volatile boolean holdTowardsClient;
  private volatile long delayNanos;

  /** Listens on a free loopback port; {@code name} names its threads. */
  public FaultProxy(String name) throws IOException {
    super("fault-proxy", name);
    listen();
  }

  /** {@code http://127.0.0.1:<port>}, for a client that takes a URL (etcd's). */
  public String endpoint() {
    return "http://127.0.0.1:" + port();
  }

  /** Where connections go; until it is set they are refused. */
  public FaultProxy target(int port) {
    this.target = port;
    return this;
  }

  /** Connections accepted so far (refused ones not counted). */
  public long accepted() {
    return accepted.get();
  }

  /** Closes every open connection and refuses new ones for {@code refuseFor}. */
  public void cut(Duration refuseFor) {
    refuseUntilNanos = System.nanoTime() + refuseFor.toNanos();
    for (Pair c : openPairs()) {
      c.close();
    }
  }

  /** Holds every byte in both directions, on open and new connections, until {@link #heal()}. */
  public void blackHole() {
    holdTowardsTarget = true;
    holdTowardsClient = true;
  }

  /**
   * A one-way partition: holds every byte the clients send (requests) until {@link #heal()}; what
   * the target sends (answers) still passes. To lose the held bytes instead of delivering them,
   * {@link #cut} before healing.
   */
  public void blackHoleTowardsTarget() {
    holdTowardsTarget = true;
  }

  /** The other one-way partition: holds what the target sends (answers); requests pass. */
  public void blackHoleTowardsClient() {
    holdTowardsClient = true;
  }

  /** Forwards every chunk of bytes after {@code delay} (zero: at once). */
  public void delay(Duration delay) {
    delayNanos = delay.toNanos();
  }

  /** Ends every open connection's direction towards its client; the other direction stays. */
  public void halfClose() {
    for (Pair c : openPairs()) {
      ((Connection) c).halfClose();
    }
  }

  /** Ends a black hole, a delay and a refusal: bytes flow again (the held ones first). */
  public void heal() {
    refuseUntilNanos = 0;
    delayNanos = 0;
    synchronized (gate) {
      holdTowardsTarget = false;
      holdTowardsClient = false;
      gate.notifyAll();
    }
  }

  @Override
  int targetOfNewConnection() {
    return System.nanoTime() < refuseUntilNanos ? 0 : target;
  }

  @Override
  Pair connect(Socket client, Socket upstream) {
    accepted.incrementAndGet();
    return new Connection(client, upstream);
  }

  /** Blocks while the proxy black-holes this direction; false once the proxy is closed. */
  private boolean awaitPassage(boolean towardsTarget) throws InterruptedException {
    synchronized (gate) {
      while ((towardsTarget ? holdTowardsTarget : holdTowardsClient) && !closed) {
        gate.wait(100);
      }
    }
    long d = delayNanos;
    if (d > 0) {
      Thread.sleep(d / 1_000_000, (int) (d % 1_000_000));
    }
    return !closed;
  }

  /** A client's connection and the proxy's connection to the target, with a pump each way. */
  private final class Connection extends Pair {
    volatile boolean clientShut;

    Connection(Socket client, Socket upstream) {
      super(client, upstream);
    }

    @Override
    void start() {
      pump(client, upstream, "up");
      pump(upstream, client, "down");
    }

    private void pump(Socket from, Socket to, String direction) {
      Thread t =
          new Thread(
              () -> {
                byte[] buf = new byte[64 * 1024];
                try {
                  InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream();
                  int n;
                  while ((n = in.read(buf)) >= 0) {
                    if (!awaitPassage(to == upstream)) {
                      break;
                    }
                    if (to == client && clientShut) {
                      continue; // half-closed towards the client: what the target says is dropped
                    }
                    out.write(buf, 0, n);
                    out.flush();
                  }
                  // an end of stream from one side becomes one towards the other
                  if (!to.isOutputShutdown()) {
                    to.shutdownOutput();
                  }
                } catch (IOException e) {
                  close(); // the other side closed, or the connection was cut
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  close();
                }
                if (from.isClosed() || to.isClosed() || bothShut()) {
                  close();
                }
              },
              "fault-proxy-" + name + "-" + direction);
      t.setDaemon(true);
      t.start();
    }

    void halfClose() {
      clientShut = true;
      try {
        client.shutdownOutput();
      } catch (IOException e) {
        close();
      }
    }
  }

  @Override
  public void close() {
    super.close();
    heal();
  }
}
