package dev.paramserver.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Listening ports chosen below the ephemeral range, free, and not taken by a listener. */
class ListenPortsTest {
  @Test
  void pick_isBelowTheEphemeralRange_andFree() throws Exception {
    int low = ListenPorts.ephemeralLow();
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      int port = ListenPorts.pick();
      assertThat(port).isBetween(ListenPorts.LOW, low - 1);
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      }
      seen.add(port);
    }
    assertThat(seen).as("random choices").hasSizeGreaterThan(1);
  }

  @Test
  void aPortWithAListener_isNotFree() throws Exception {
    int port = ListenPorts.pick();
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      assertThat(ListenPorts.isFree(port, false)).isFalse();
    }
    assertThat(ListenPorts.isFree(port, false)).isTrue();
  }
}
