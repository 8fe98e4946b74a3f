package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PortAllocatorTest {

  @Test
  void next_neverHandsOutTheSamePortTwice() {
    PortAllocator ports = new PortAllocator();
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 40; i++) {
      int port = ports.next();
      assertThat(port).isBetween(1, 65535);
      assertThat(seen.add(port)).as("port %d handed out twice", port).isTrue();
    }
  }

  @Test
  void reuseOrNext_keepsAFreePortAndReplacesABusyOne() throws Exception {
    PortAllocator ports = new PortAllocator();
    int port = ports.next();
    assertThat(ports.reuseOrNext(port)).isEqualTo(port);

    try (ServerSocket busy = new ServerSocket()) {
      busy.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      assertThat(PortAllocator.isFree(port)).isFalse();
      int other = ports.reuseOrNext(port);
      assertThat(other).isNotEqualTo(port);
      assertThat(PortAllocator.isFree(other)).isTrue();
    }
  }
}
