package dev.paramserver.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class DelayLineTest {
  private final List<AutoCloseable> resources = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    Collections.reverse(resources);
    for (AutoCloseable r : resources) {
      r.close();
    }
  }

  /** A server on 127.0.0.1 that hands each accepted connection to {@code handler}. */
  private int server(Consumer<Socket> handler) throws IOException {
    ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    resources.add(server);
    Thread t =
        new Thread(
            () -> {
              while (!server.isClosed()) {
                try {
                  Socket s = server.accept();
                  Thread h = new Thread(() -> handler.accept(s), "handler");
                  h.setDaemon(true);
                  h.start();
                } catch (IOException e) {
                  return;
                }
              }
            },
            "accept");
    t.setDaemon(true);
    t.start();
    return server.getLocalPort();
  }

  private DelayLine line(Duration delay, double rate, int target) throws IOException {
    DelayLine l = new DelayLine("test", delay, rate).target(target);
    resources.add(l);
    return l;
  }

  private Socket connect(DelayLine l) throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), l.port());
    s.setTcpNoDelay(true);
    s.setSoTimeout(30_000);
    resources.add(s);
    return s;
  }

  @Test
  void aRoundTripTakesTwiceTheDelayAndEveryByteComesBackInOrder() throws Exception {
    DelayLine l = line(Duration.ofMillis(30), 0, server(DelayLineTest::echo));
    Socket s = connect(l);
    byte[] sent = new byte[200_000];
    new java.util.Random(7).nextBytes(sent);

    long start = System.nanoTime();
    s.getOutputStream().write(sent, 0, 1);
    assertThat(s.getInputStream().read()).isEqualTo(sent[0] & 0xff);
    long roundTripMs = (System.nanoTime() - start) / 1_000_000;
    assertThat(roundTripMs).isBetween(60L, 2_000L);

    Thread writer =
        new Thread(
            () -> {
              try {
                s.getOutputStream().write(sent, 1, sent.length - 1);
              } catch (IOException e) {
                // the read below fails
              }
            });
    writer.start();
    byte[] back = new DataInputStream(s.getInputStream()).readNBytes(sent.length - 1);
    writer.join();
    assertThat(crc(back, 0)).isEqualTo(crc(sent, 1));
    // the writer counts a chunk right after the write the client may already have read
    Poll.until(
        Duration.ofSeconds(10), () -> l.forwarded() == 2L * sent.length, "both ways counted");
  }

  @Test
  void chunksInFlightEachWaitTheDelayOnceNotOneAfterAnother() throws Exception {
    // the sink notes how long each stamped message took; 40 messages 2 ms apart through a line of
    // 100 ms: stop-and-wait (a sleep per chunk) would hold most of them close to 200 ms
    List<Long> latencyMs = new CopyOnWriteArrayList<>();
    int port =
        server(
            s -> {
              try (s) {
                DataInputStream in = new DataInputStream(s.getInputStream());
                while (true) {
                  long sentAt = in.readLong();
                  latencyMs.add((System.nanoTime() - sentAt) / 1_000_000);
                }
              } catch (IOException e) {
                // end of stream
              }
            });
    DelayLine l = line(Duration.ofMillis(100), 0, port);
    DataOutputStream out = new DataOutputStream(connect(l).getOutputStream());
    for (int i = 0; i < 40; i++) {
      out.writeLong(System.nanoTime());
      out.flush();
      LockSupport.parkNanos(2_000_000); // the traffic's pace, not a wait for a result
    }
    Poll.until(Duration.ofSeconds(20), () -> latencyMs.size() == 40, "40 messages at the sink");

    List<Long> sorted = latencyMs.stream().sorted().toList();
    assertThat(sorted.get(0)).as("never early").isGreaterThanOrEqualTo(100L);
    assertThat(sorted.get(20)).as("median").isLessThan(135L);
  }

  @Test
  void theRateCapsTheBytesPerSecond() throws Exception {
    CRC32 received = new CRC32();
    long[] count = new long[1];
    int port =
        server(
            s -> {
              try (s) {
                InputStream in = s.getInputStream();
                byte[] buf = new byte[8192];
                int n;
                while ((n = in.read(buf)) >= 0) {
                  synchronized (count) {
                    received.update(buf, 0, n);
                    count[0] += n;
                  }
                }
              } catch (IOException e) {
                // end of stream
              }
            });
    // 1 MB/s: 400,000 bytes take at least (400,000 - one bucket of 64 KiB) / 1 MB/s = 0.33 s
    DelayLine l = line(Duration.ZERO, 1_000_000, port);
    byte[] sent = new byte[400_000];
    new java.util.Random(3).nextBytes(sent);
    long start = System.nanoTime();
    OutputStream out = connect(l).getOutputStream();
    out.write(sent);
    out.flush();
    Poll.until(
        Duration.ofSeconds(20),
        () -> {
          synchronized (count) {
            return count[0] == sent.length;
          }
        },
        "every byte at the sink");
    double seconds = (System.nanoTime() - start) / 1e9;

    assertThat(seconds).isBetween(0.30, 10.0);
    assertThat(received.getValue()).isEqualTo(crc(sent, 0));
  }

  @Test
  void bucket_letsABurstThroughThenPacesAtTheRate() {
    DelayLine.Bucket b = new DelayLine.Bucket(1000, 0);

    assertThat(b.take(1000, 1e6, 0)).isZero(); // a full bucket
    assertThat(b.take(500, 1e6, 0)).isEqualTo(500_000); // 500 bytes at 1 MB/s: 0.5 ms
    assertThat(b.take(500, 1e6, 500_000)).isEqualTo(1_000_000);
    assertThat(b.take(500, 0, 0)).isZero(); // unlimited
  }

  private static void echo(Socket s) {
    try (s) {
      InputStream in = s.getInputStream();
      OutputStream out = s.getOutputStream();
      byte[] buf = new byte[16384];
      int n;
      while ((n = in.read(buf)) >= 0) {
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // the client went away
    }
  }

  private static long crc(byte[] b, int from) {
    CRC32 c = new CRC32();
    c.update(b, from, b.length - from);
    return c.getValue();
  }
}
