package dev.paramserver.launcher;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for local servers to listen on, chosen below the kernel's ephemeral range ({@code
 * /proc/sys/net/ipv4/ip_local_port_range}, 32768-60999 by default). A port the OS hands out for
 * port 0 comes from that range, and so does the source port of every outgoing connection: a process
 * restarted on its old port found it taken by some connection of a busy machine (a pserver's port,
 * between a kill and the restart, while another cluster ran beside it). Below the range only
 * another listener can take a port, and each choice is random and checked free.
 */
public final class ListenPorts {
  /** The lowest port chosen. */
  static final int LOW = 20000;

  private static final int ATTEMPTS = 100;
  private static final Path RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");

  private ListenPorts() {}

  /**
   * A port free on 127.0.0.1 now, outside the ephemeral range when the range leaves room below it
   * (else one the OS picks for port 0). Another process may take it before it is used: a caller
   * that must not lose it binds at once.
   */
  public static int pick() {
    int high = ephemeralLow() - 1;
    if (high - LOW >= 1000) {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      for (int i = 0; i < ATTEMPTS; i++) {
        int port = LOW + random.nextInt(high - LOW + 1);
        if (isFree(port, false)) {
          return port;
        }
      }
    }
    return osPicked();
  }

  /**
   * Whether a listening socket could bind 127.0.0.1:port right now.
   *
   * @param reuseAddress with SO_REUSEADDR, as Tomcat and Netty bind: a port whose only sockets are
   *     in TIME_WAIT (the leftovers of a killed process) counts as free
   */
  public static boolean isFree(int port, boolean reuseAddress) {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(reuseAddress);
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** The first port of the kernel's ephemeral range (32768 where it cannot be read). */
  static int ephemeralLow() {
    // a line read, not Files.readString: procfs reports a size of 0 and readString misread it
    try (BufferedReader r = Files.newBufferedReader(RANGE, StandardCharsets.US_ASCII)) {
      String[] range = r.readLine().trim().split("\\s+");
      return Integer.parseInt(range[0]);
    } catch (IOException | RuntimeException e) {
      return 32768;
    }
  }

  private static int osPicked() {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(false);
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("could not find a free port on 127.0.0.1", e);
    }
  }
}
