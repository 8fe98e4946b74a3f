package dev.paramserver.bench.wire;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The raw socket baseline at an in-flight depth: requests pipelined on ONE loopback TCP connection
 * to the echo server, a reader thread taking the answers back in order. Bytes move the way the
 * loopback allows: NIO {@link SocketChannel}s, a direct payload buffer written with one gathering
 * write (header and payload), TCP_NODELAY and {@link #SOCKET_BUFFER}-byte socket buffers.
 *
 * <p>Echo (both ways): the server sends the payload back as it reads it. Push-only (one way, as a
 * push): the server reads the payload and answers an 8-byte ack. One connection, because that is
 * what the other rows have too: gRPC multiplexes every in-flight call of a channel on one HTTP/2
 * connection, and ps-lite's worker talks to its server over one connection.
 */
final class RawPipelineOps implements AsyncOp {
  static final int SOCKET_BUFFER = 4 << 20;
  static final int READ_CHUNK = 1 << 20;

  private final SocketChannel socket;
  private final ByteBuffer header = ByteBuffer.allocateDirect(8);
  private final ByteBuffer payload;
  private final boolean oneWay;
  private final ConcurrentLinkedQueue<Completion> waiting = new ConcurrentLinkedQueue<>();
  private final Thread reader;
  private volatile boolean closed;

  RawPipelineOps(int port, int size, boolean oneWay) throws IOException {
    this.oneWay = oneWay;
    socket = open(port);
    header.putLong(0, EchoServerMain.rawHeader(size, oneWay));
    payload = ByteBuffer.allocateDirect(size);
    reader = new Thread(this::read, "raw-pipeline-reader");
    reader.setDaemon(true);
    reader.start();
  }

  static SocketChannel open(int port) throws IOException {
    SocketChannel s = SocketChannel.open();
    s.setOption(StandardSocketOptions.TCP_NODELAY, true);
    s.setOption(StandardSocketOptions.SO_SNDBUF, SOCKET_BUFFER);
    s.setOption(StandardSocketOptions.SO_RCVBUF, SOCKET_BUFFER);
    s.connect(new InetSocketAddress("127.0.0.1", port));
    return s;
  }

  @Override
  public synchronized void start(Completion c) throws IOException {
    waiting.add(c);
    ByteBuffer[] bufs = {header.duplicate().clear(), payload.duplicate().clear()};
    long left = 8L + payload.capacity();
    while (left > 0) {
      left -= socket.write(bufs);
    }
  }

  private void read() {
    ByteBuffer buf = ByteBuffer.allocateDirect(READ_CHUNK);
    long answer = oneWay ? 8 : payload.capacity();
    try {
      while (!closed) {
        long left = answer;
        while (left > 0) {
          buf.clear().limit((int) Math.min(buf.capacity(), left));
          int n = socket.read(buf);
          if (n < 0) {
            throw new IOException("raw echo server closed the connection");
          }
          left -= n;
        }
        Completion c = waiting.poll();
        if (c == null) {
          throw new IOException("raw echo server answered a request that was not sent");
        }
        c.done();
      }
    } catch (IOException e) {
      Completion c;
      while (!closed && (c = waiting.poll()) != null) {
        c.failed(e);
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      socket.close();
      reader.join(2000);
    } catch (IOException e) {
      // closing anyway
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
