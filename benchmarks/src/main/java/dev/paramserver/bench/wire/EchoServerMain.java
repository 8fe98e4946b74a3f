package dev.paramserver.bench.wire;

import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The baselines' server process: a bare gRPC byte-echo server (same grpc-java as the pserver,
 * tuned: direct executor, 16 MiB flow-control window, 64 MiB messages) and a raw TCP echo server,
 * both on 127.0.0.1. Prints {@code READY grpc=<port> raw=<port>} and runs until stdin closes.
 *
 * <p>Raw protocol (NIO, direct buffers, big socket buffers): the client sends an 8-byte big-endian
 * header, then that many bytes; a positive header is the length of an echo, whose bytes the server
 * sends back as it reads them; a negative one the negated length of a one-way push, which the
 * server reads and acknowledges with 8 bytes.
 */
public final class EchoServerMain {
  static final int WINDOW = 16 * 1024 * 1024;
  static final int MAX_MESSAGE = 64 * 1024 * 1024;

  private EchoServerMain() {}

  public static void main(String[] args) throws Exception {
    ConcurrentHashMap<Integer, byte[]> sources = new ConcurrentHashMap<>();
    ServerServiceDefinition service =
        ServerServiceDefinition.builder(EchoProtocol.SERVICE)
            .addMethod(
                EchoProtocol.ECHO,
                ServerCalls.asyncUnaryCall(
                    (req, out) -> {
                      out.onNext(req);
                      out.onCompleted();
                    }))
            .addMethod(
                EchoProtocol.SINK,
                ServerCalls.asyncUnaryCall(
                    (req, out) -> {
                      out.onNext(new byte[0]);
                      out.onCompleted();
                    }))
            .addMethod(
                EchoProtocol.SOURCE,
                ServerCalls.asyncUnaryCall(
                    (req, out) -> {
                      out.onNext(sources.computeIfAbsent(EchoProtocol.sizeOf(req), byte[]::new));
                      out.onCompleted();
                    }))
            .build();
    NettyServerBuilder sb =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .maxInboundMessageSize(MAX_MESSAGE)
            .addService(service);
    if (Boolean.parseBoolean(System.getProperty("bench.echo.direct", "true"))) {
      sb.directExecutor();
    }
    int window = Integer.getInteger("bench.echo.window", WINDOW);
    if (window > 0) {
      sb.flowControlWindow(window);
    }
    // a development aid (WireProbe): BDP auto-tuning kept on from this initial window
    int initial = Integer.getInteger("bench.echo.initialWindow", 0);
    if (initial > 0) {
      sb.initialFlowControlWindow(initial);
    }
    Server grpc = sb.build().start();
    ServerSocketChannel raw = ServerSocketChannel.open();
    raw.setOption(StandardSocketOptions.SO_RCVBUF, RawPipelineOps.SOCKET_BUFFER);
    raw.bind(new InetSocketAddress("127.0.0.1", 0), 64);
    Thread acceptor = new Thread(() -> accept(raw), "raw-accept");
    acceptor.setDaemon(true);
    acceptor.start();
    System.out.println(
        "READY grpc="
            + grpc.getPort()
            + " raw="
            + ((InetSocketAddress) raw.getLocalAddress()).getPort());
    System.out.flush();
    // the driver closes our stdin (or dies): then leave
    while (System.in.read() >= 0) {
      // ignore input
    }
    raw.close();
    grpc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  /**
   * The raw protocol's 8-byte header: the payload length, negated for a one-way (push-only)
   * request.
   */
  static long rawHeader(int size, boolean oneWay) {
    return oneWay ? -(long) size : size;
  }

  private static void accept(ServerSocketChannel raw) {
    while (raw.isOpen()) {
      try {
        SocketChannel s = raw.accept();
        Thread t = new Thread(() -> serve(s), "raw-echo");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private static void serve(SocketChannel s) {
    ByteBuffer buf = ByteBuffer.allocateDirect(RawPipelineOps.READ_CHUNK);
    ByteBuffer head = ByteBuffer.allocateDirect(8);
    ByteBuffer ack = ByteBuffer.allocateDirect(8);
    try (s) {
      s.setOption(StandardSocketOptions.TCP_NODELAY, true);
      s.setOption(StandardSocketOptions.SO_SNDBUF, RawPipelineOps.SOCKET_BUFFER);
      s.setOption(StandardSocketOptions.SO_RCVBUF, RawPipelineOps.SOCKET_BUFFER);
      while (true) {
        head.clear();
        if (!readFully(s, head)) {
          return;
        }
        long h = head.getLong(0);
        boolean oneWay = h < 0;
        long len = Math.abs(h);
        while (len > 0) {
          buf.clear().limit((int) Math.min(buf.capacity(), len));
          int n = s.read(buf);
          if (n < 0) {
            return;
          }
          len -= n;
          if (!oneWay) {
            buf.flip();
            while (buf.hasRemaining()) {
              s.write(buf);
            }
          }
        }
        if (oneWay) {
          ack.clear().putLong(0, h).limit(8);
          while (ack.hasRemaining()) {
            s.write(ack);
          }
        }
      }
    } catch (IOException e) {
      // client went away
    }
  }

  private static boolean readFully(SocketChannel s, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (s.read(b) < 0) {
        return false;
      }
    }
    return true;
  }
}
