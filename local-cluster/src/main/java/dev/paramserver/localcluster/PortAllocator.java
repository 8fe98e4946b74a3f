package dev.paramserver.localcluster;

import dev.paramserver.launcher.ListenPorts;
import java.util.HashSet;
import java.util.Set;

/**
 * Hands out free TCP ports on 127.0.0.1, never the same one twice within a cluster (two processes
 * launched at the same moment would otherwise race for one port the OS offered to both), chosen
 * below the kernel's ephemeral range ({@link ListenPorts}) so that no outgoing connection takes a
 * restarted process's port meanwhile.
 */
final class PortAllocator {
  private static final int ATTEMPTS = 50;
  private final Set<Integer> handedOut = new HashSet<>();

  /** A port that is free now and was not handed out before by this allocator. */
  synchronized int next() {
    for (int i = 0; i < ATTEMPTS; i++) {
      int port = ListenPorts.pick();
      if (handedOut.add(port)) {
        return port;
      }
    }
    throw new IllegalStateException(
        "no fresh free port on 127.0.0.1 after " + ATTEMPTS + " attempts");
  }

  /**
   * {@code port} if a server could bind it now (with SO_REUSEADDR, as Tomcat and Netty do, so
   * TIME_WAIT leftovers of a killed process do not count), else a fresh port.
   */
  synchronized int reuseOrNext(int port) {
    if (port > 0 && isFree(port)) {
      handedOut.add(port);
      return port;
    }
    return next();
  }

  /** Whether a listening socket could bind 127.0.0.1:port right now (with SO_REUSEADDR). */
  static boolean isFree(int port) {
    return ListenPorts.isFree(port, true);
  }
}
