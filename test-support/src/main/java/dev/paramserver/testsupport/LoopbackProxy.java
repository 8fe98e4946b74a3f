package dev.paramserver.testsupport;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the test proxies on 127.0.0.1 share ({@link FaultProxy}, {@link DelayLine}): a listening
 * socket on a free loopback port, an accept loop that connects each client to the current target,
 * the set of open connection pairs, and closing. A subclass says where a new connection goes and
 * how bytes cross a pair.
 */
abstract class LoopbackProxy implements AutoCloseable {
  private final ServerSocket server;
  private final String threadPrefix;
  private final Set<Pair> open = ConcurrentHashMap.newKeySet();

  /** Names the proxy's threads. */
  final String name;

  volatile boolean closed;

  /**
   * Binds a free loopback port; connections are accepted once the subclass's constructor calls
   * {@link #listen()} (so the accept thread never sees a half-built proxy).
   */
  LoopbackProxy(String threadPrefix, String name) throws IOException {
    this.name = name;
    this.threadPrefix = threadPrefix;
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
  }

  /** Starts the accept thread, {@code <threadPrefix>-<name>}: the last step of a constructor. */
  final void listen() {
    Thread t = new Thread(this::acceptLoop, threadPrefix + "-" + name);
    t.setDaemon(true);
    t.start();
  }

  public int port() {
    return server.getLocalPort();
  }

  /** The port on 127.0.0.1 a connection accepted now goes to; 0 or less refuses it. */
  abstract int targetOfNewConnection();

  /** Makes the pair of a connection accepted now and starts moving its bytes. */
  abstract Pair connect(Socket client, Socket upstream) throws IOException;

  /** The pairs open now. */
  final Iterable<Pair> openPairs() {
    return open;
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return;
      }
      int port = targetOfNewConnection();
      if (port <= 0) {
        closeQuietly(client);
        continue;
      }
      try {
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), port);
        Pair p = connect(client, upstream);
        open.add(p);
        p.start();
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  /** A client's connection and the proxy's connection to the target. */
  abstract class Pair {
    final Socket client;
    final Socket upstream;

    Pair(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
    }

    /** Starts the threads that move the bytes of both directions. */
    abstract void start();

    /** Both sides have ended their output: nothing more can cross. */
    final boolean bothShut() {
      return client.isOutputShutdown() && upstream.isOutputShutdown();
    }

    final void close() {
      open.remove(this);
      closeQuietly(client);
      closeQuietly(upstream);
    }
  }

  static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  /** Stops accepting and closes every open pair. */
  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      // already closed
    }
    for (Pair p : open) {
      p.close();
    }
  }
}
