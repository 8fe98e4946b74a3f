package dev.paramserver.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;

/**
 * A TCP proxy on 127.0.0.1 that behaves like a network link with a one-way delay and a bandwidth:
 * the kernel here has no {@code netem}, so the delay is emulated in user space. Per connection and
 * direction, a reader stamps each chunk it reads and queues it; a writer sends each chunk at its
 * stamp plus the delay, no earlier, and no faster than a token bucket of the link's rate allows. So
 * many chunks are in flight at once, as on a real link ({@link FaultProxy#delay} instead sleeps
 * before each chunk: stop-and-wait, its throughput one chunk per delay).
 *
 * <p>Give one side the proxy's port instead of the other side's (a pserver's advertised port, for
 * example); {@link #target(IntSupplier)} says where connections go, read at each connection (0:
 * refused). The queue of a direction holds at most {@value #QUEUED_CHUNKS} chunks of up to {@value
 * #CHUNK} bytes; a full queue stops its reader, and so the sender, as TCP's window would.
 */
public final class DelayLine extends LoopbackProxy {
  /** Bytes read at most at once: one chunk. */
  public static final int CHUNK = 64 * 1024;

  /** Chunks a direction holds in flight at most. */
  public static final int QUEUED_CHUNKS = 1024;

  private static final Chunk END = new Chunk(new byte[0], 0, 0);

  private final AtomicLong forwarded = new AtomicLong();
  private volatile IntSupplier target = () -> 0;
  private volatile long delayNanos;
  private volatile double bytesPerSecond;

  /**
   * Listens on a free loopback port.
   *
   * @param delay the one-way delay of each byte (zero: none)
   * @param bytesPerSecond the link's rate in each direction (0 or less: unlimited)
   */
  public DelayLine(String name, Duration delay, double bytesPerSecond) throws IOException {
    super("delay-line", name);
    if (delay.isNegative()) {
      super.close();
      throw new IllegalArgumentException("a delay line's delay must not be negative: " + delay);
    }
    this.delayNanos = delay.toNanos();
    this.bytesPerSecond = bytesPerSecond;
    listen();
  }

  /** Where new connections go: the port on 127.0.0.1 (read per connection; 0: refused). */
  public DelayLine target(IntSupplier port) {
    this.target = port;
    return this;
  }

  /** Where new connections go. */
  public DelayLine target(int port) {
    return target(() -> port);
  }

  /** Sets the one-way delay of the bytes read from now on. */
  public void delay(Duration delay) {
    this.delayNanos = delay.toNanos();
  }

  /** Sets the rate of each direction from now on (0 or less: unlimited). */
  public void rate(double bytesPerSecond) {
    this.bytesPerSecond = bytesPerSecond;
  }

  /** Bytes forwarded so far, both directions of every connection. */
  public long forwarded() {
    return forwarded.get();
  }

  @Override
  int targetOfNewConnection() {
    return target.getAsInt();
  }

  @Override
  Pair connect(Socket client, Socket upstream) throws IOException {
    client.setTcpNoDelay(true);
    upstream.setTcpNoDelay(true);
    return new Link(client, upstream);
  }

  /** Bytes read at {@code stampNanos}, to be written at the stamp plus the delay. */
  private record Chunk(byte[] bytes, int length, long stampNanos) {}

  /**
   * A token bucket of the link's rate: a chunk goes when the bucket holds its bytes (or is full,
   * for a chunk larger than the bucket, which then runs into debt).
   */
  static final class Bucket {
    private final long burst;
    private double tokens;
    private long lastNanos;

    Bucket(long burst, long nowNanos) {
      this.burst = burst;
      this.tokens = burst;
      this.lastNanos = nowNanos;
    }

    /** When {@code bytes} may go at {@code rate}, not before {@code nowNanos}; takes them. */
    long take(int bytes, double rate, long nowNanos) {
      if (rate <= 0) {
        return nowNanos;
      }
      tokens = Math.min(burst, tokens + (nowNanos - lastNanos) * rate / 1e9);
      lastNanos = nowNanos;
      double need = Math.min(bytes, burst);
      long at = nowNanos;
      if (tokens < need) {
        at = nowNanos + (long) Math.ceil((need - tokens) / rate * 1e9);
        tokens = need;
        lastNanos = at;
      }
      tokens -= bytes;
      return at;
    }
  }

  /** A client's connection and the proxy's connection to the target, a delay line each way. */
  private final class Link extends Pair {
    Link(Socket client, Socket upstream) {
      super(client, upstream);
    }

    @Override
    void start() {
      direction(client, upstream, "up");
      direction(upstream, client, "down");
    }

    private void direction(Socket from, Socket to, String which) {
      BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(QUEUED_CHUNKS);
      Thread reader =
          new Thread(() -> read(from, queue), "delay-line-" + name + "-" + which + "-read");
      Thread writer =
          new Thread(() -> write(queue, to), "delay-line-" + name + "-" + which + "-write");
      reader.setDaemon(true);
      writer.setDaemon(true);
      reader.start();
      writer.start();
    }

    private void read(Socket from, BlockingQueue<Chunk> queue) {
      byte[] buf = new byte[CHUNK];
      try {
        InputStream in = from.getInputStream();
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (n > 0) {
            queue.put(new Chunk(Arrays.copyOf(buf, n), n, System.nanoTime()));
          }
        }
        queue.put(END);
      } catch (IOException e) {
        close();
        queue.offer(END);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        close();
      }
    }

    private void write(BlockingQueue<Chunk> queue, Socket to) {
      Bucket bucket = new Bucket(CHUNK, System.nanoTime());
      try {
        OutputStream out = to.getOutputStream();
        while (true) {
          Chunk c = queue.take();
          if (c == END) {
            // an end of stream from one side becomes one towards the other
            if (!to.isClosed() && !to.isOutputShutdown()) {
              to.shutdownOutput();
            }
            if (bothShut()) {
              close();
            }
            return;
          }
          long due = c.stampNanos() + delayNanos;
          due = bucket.take(c.length(), bytesPerSecond, Math.max(due, System.nanoTime()));
          awaitNanos(due);
          out.write(c.bytes(), 0, c.length());
          out.flush();
          forwarded.addAndGet(c.length());
        }
      } catch (IOException e) {
        close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        close();
      }
    }
  }

  /**
   * Waits until {@link System#nanoTime} reaches {@code due}: parks, so a chunk leaves at most the
   * timer's slack (about 50-100 µs here) late; spinning would be exact but burn a core.
   */
  private static void awaitNanos(long due) {
    long left;
    while ((left = due - System.nanoTime()) > 0) {
      LockSupport.parkNanos(left);
    }
  }
}
