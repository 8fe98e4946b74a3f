package dev.paramserver.bench.wire;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The raw socket baseline at an in-flight depth: requests pipelined on ONE loopback TCP connection
 * to the echo server (length-prefixed, as {@link RawSocketOps}), a reader thread taking the echoes
 * back in order. One connection, because that is what the other rows have too: gRPC multiplexes
 * every in-flight call of a channel on one HTTP/2 connection, and ps-lite's worker talks to its
 * server over one connection; d connections would measure d TCP streams and several kernel queues
 * against one.
 */
final class RawPipelineOps implements AsyncOp {
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final byte[] header = new byte[8];
  private final byte[] payload;
  private final ConcurrentLinkedQueue<Completion> waiting = new ConcurrentLinkedQueue<>();
  private final Thread reader;
  private volatile boolean closed;

  RawPipelineOps(int port, int size) throws IOException {
    socket = new Socket("127.0.0.1", port);
    socket.setTcpNoDelay(true);
    in = socket.getInputStream();
    out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
    for (int i = 0; i < 8; i++) {
      header[i] = (byte) ((long) size >>> (56 - 8 * i));
    }
    payload = new byte[size];
    reader = new Thread(this::read, "raw-pipeline-reader");
    reader.setDaemon(true);
    reader.start();
  }

  @Override
  public void start(Completion c) throws IOException {
    waiting.add(c);
    out.write(header);
    out.write(payload);
    out.flush();
  }

  private void read() {
    byte[] buf = new byte[1 << 20];
    try {
      while (!closed) {
        long left = payload.length;
        while (left > 0) {
          int n = in.read(buf, 0, (int) Math.min(buf.length, left));
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
