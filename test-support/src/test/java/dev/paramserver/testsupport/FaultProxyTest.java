package dev.paramserver.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class FaultProxyTest {
  private final AtomicInteger lastReceived = new AtomicInteger(-1);
  private ServerSocket echo;
  private FaultProxy proxy;

  @BeforeEach
  void echoServerBehindAProxy() throws IOException {
    echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t =
        new Thread(
            () -> {
              while (!echo.isClosed()) {
                try {
                  Socket s = echo.accept();
                  Thread e = new Thread(() -> echoUntilEnd(s), "echo");
                  e.setDaemon(true);
                  e.start();
                } catch (IOException e) {
                  return;
                }
              }
            },
            "echo-accept");
    t.setDaemon(true);
    t.start();
    proxy = new FaultProxy("test").target(echo.getLocalPort());
  }

  /** Echoes every byte; at the client's end of stream it writes "bye" and closes. */
  private void echoUntilEnd(Socket s) {
    try (s) {
      InputStream in = s.getInputStream();
      OutputStream out = s.getOutputStream();
      int b;
      while ((b = in.read()) >= 0) {
        lastReceived.set(b);
        out.write(b);
        out.flush();
      }
      out.write("bye".getBytes());
    } catch (IOException e) {
      // the test closed it
    }
  }

  @AfterEach
  void close() throws IOException {
    proxy.close();
    echo.close();
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
    s.setSoTimeout(2000);
    return s;
  }

  private static int roundTrip(Socket s, int b) throws IOException {
    s.getOutputStream().write(b);
    s.getOutputStream().flush();
    return s.getInputStream().read();
  }

  @Test
  void forwardsBothWays_andCutClosesConnectionsAndRefusesNewOnes() throws Exception {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 7)).isEqualTo(7);
      proxy.cut(Duration.ofSeconds(30));
      int after;
      try {
        after = roundTrip(s, 8);
      } catch (IOException e) {
        after = -1; // reset
      }
      assertThat(after).as("cut: the connection is closed").isEqualTo(-1);
    }
    try (Socket refused = connect()) {
      assertThat(refused.getInputStream().read()).as("refused: closed at once").isEqualTo(-1);
    }
    proxy.heal();
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 9)).isEqualTo(9);
    }
    assertThat(proxy.accepted()).isEqualTo(2);
  }

  @Test
  void blackHole_holdsBytesOfOpenAndNewConnections_untilHealed() throws Exception {
    try (Socket open = connect()) {
      assertThat(roundTrip(open, 1)).isEqualTo(1);
      proxy.blackHole();
      open.setSoTimeout(500);
      assertThatThrownBy(() -> roundTrip(open, 2)).isInstanceOf(SocketTimeoutException.class);
      try (Socket fresh = connect()) {
        fresh.setSoTimeout(500);
        assertThatThrownBy(() -> roundTrip(fresh, 3)).isInstanceOf(SocketTimeoutException.class);
        proxy.heal();
        fresh.setSoTimeout(2000);
        assertThat(fresh.getInputStream().read()).as("held byte, delivered").isEqualTo(3);
      }
      open.setSoTimeout(2000);
      assertThat(open.getInputStream().read()).as("held byte, delivered").isEqualTo(2);
    }
  }

  @Test
  void blackHoleTowardsTarget_holdsRequestsOnly_answersStillPass() throws Exception {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 1)).isEqualTo(1);
      proxy.blackHoleTowardsTarget();
      s.setSoTimeout(500);
      assertThatThrownBy(() -> roundTrip(s, 2)).isInstanceOf(SocketTimeoutException.class);
      assertThat(lastReceived.get()).as("the request is held before the target").isEqualTo(1);
      proxy.heal();
      s.setSoTimeout(2000);
      assertThat(s.getInputStream().read()).as("held request, delivered and echoed").isEqualTo(2);
    }
  }

  @Test
  void blackHoleTowardsClient_requestsArrive_answersHeld() throws Exception {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 1)).isEqualTo(1);
      proxy.blackHoleTowardsClient();
      s.setSoTimeout(500);
      assertThatThrownBy(() -> roundTrip(s, 2)).isInstanceOf(SocketTimeoutException.class);
      Poll.until(Duration.ofSeconds(5), () -> lastReceived.get() == 2, "the target to get 2");
      proxy.cut(Duration.ZERO); // held answers are lost, not delivered late
      proxy.heal();
      s.setSoTimeout(2000);
      int after;
      try {
        after = s.getInputStream().read();
      } catch (IOException e) {
        after = -1; // reset
      }
      assertThat(after).as("cut before healing: the held answer never arrives").isEqualTo(-1);
    }
  }

  @Test
  void delay_holdsEachChunk() throws Exception {
    try (Socket s = connect()) {
      proxy.delay(Duration.ofMillis(300));
      long t0 = System.nanoTime();
      assertThat(roundTrip(s, 5)).isEqualTo(5);
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThan(Duration.ofMillis(550));
    }
  }

  @Test
  void halfClose_endsTheDirectionTowardsTheClient_whatItSendsStillArrives() throws Exception {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 4)).isEqualTo(4);
      proxy.halfClose();
      assertThat(s.getInputStream().read()).as("end of stream towards the client").isEqualTo(-1);
      // the client can still write; the target gets it (its echo is dropped) and sees the
      // client's end of stream in turn
      s.getOutputStream().write(6);
      s.getOutputStream().flush();
      Poll.until(Duration.ofSeconds(5), () -> lastReceived.get() == 6, "the target to get 6");
    }
  }
}
