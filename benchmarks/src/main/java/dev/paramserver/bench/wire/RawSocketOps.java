package dev.paramserver.bench.wire;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The raw socket baseline: {@code size} bytes to the echo server over loopback TCP and the same
 * bytes back; large sizes are written by a helper thread while this one reads, so both directions
 * stream at once.
 */
final class RawSocketOps implements Op {
  private static final int INLINE = 256 * 1024;

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final byte[] payload;
  private final byte[] buf = new byte[1 << 20];
  private final ExecutorService writer;

  RawSocketOps(int port, int size) throws IOException {
    socket = new Socket("127.0.0.1", port);
    socket.setTcpNoDelay(true);
    in = socket.getInputStream();
    out = socket.getOutputStream();
    payload = new byte[8 + size];
    for (int i = 0; i < 8; i++) {
      payload[i] = (byte) ((long) size >>> (56 - 8 * i));
    }
    writer =
        size > INLINE
            ? Executors.newSingleThreadExecutor(
                r -> {
                  Thread t = new Thread(r, "raw-writer");
                  t.setDaemon(true);
                  return t;
                })
            : null;
  }

  @Override
  public void run() throws Exception {
    Future<?> w = null;
    if (writer == null) {
      out.write(payload);
    } else {
      w =
          writer.submit(
              () -> {
                out.write(payload);
                return null;
              });
    }
    long left = payload.length - 8;
    while (left > 0) {
      int n = in.read(buf, 0, (int) Math.min(buf.length, left));
      if (n < 0) {
        throw new IOException("raw echo server closed the connection");
      }
      left -= n;
    }
    if (w != null) {
      w.get();
    }
  }

  @Override
  public void close() {
    if (writer != null) {
      writer.shutdownNow();
    }
    try {
      socket.close();
    } catch (IOException e) {
      // closing anyway
    }
  }
}
