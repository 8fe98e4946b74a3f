package dev.paramserver.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/** Free TCP ports on the loopback interface. */
public final class FreePorts {
  private FreePorts() {}

  /**
   * A port that was free on 127.0.0.1 a moment ago (the OS picked it for a socket bound to port 0,
   * then the socket was closed). Another process may take it in between; tests accept that risk.
   */
  public static int next() {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(false);
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("could not find a free port on 127.0.0.1", e);
    }
  }
}
