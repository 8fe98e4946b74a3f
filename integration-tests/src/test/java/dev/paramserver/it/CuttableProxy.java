package dev.paramserver.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on 127.0.0.1 whose connections the test can cut: it forwards to a target port set
 * later, and {@link #cut(long)} closes every open connection and refuses new ones for a while.
 */
final class CuttableProxy implements AutoCloseable {
  private final ServerSocket server;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile int target;
  private volatile long refuseUntilNanos;
  private volatile boolean closed;

  CuttableProxy() throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, "cuttable-proxy");
    t.setDaemon(true);
    t.start();
  }

  int port() {
    return server.getLocalPort();
  }

  /** Where connections go (until set, they are refused). */
  void target(int port) {
    this.target = port;
  }

  /** Closes every open connection and refuses new ones for {@code millis}. */
  void cut(long millis) {
    refuseUntilNanos = System.nanoTime() + millis * 1_000_000;
    for (Socket s : open) {
      closeQuietly(s);
    }
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return;
      }
      if (target == 0 || System.nanoTime() < refuseUntilNanos) {
        closeQuietly(client);
        continue;
      }
      try {
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
        open.add(client);
        open.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[64 * 1024];
              try (InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                  out.write(buf, 0, n);
                }
              } catch (IOException e) {
                // the other side closed, or the connection was cut
              } finally {
                closeQuietly(from);
                closeQuietly(to);
              }
            },
            "cuttable-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private void closeQuietly(Socket s) {
    open.remove(s);
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      // already closed
    }
    for (Socket s : open) {
      closeQuietly(s);
    }
  }
}
