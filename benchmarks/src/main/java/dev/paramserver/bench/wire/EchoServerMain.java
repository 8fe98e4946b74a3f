package dev.paramserver.bench.wire;

import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The baselines' server process: a bare gRPC byte-echo server (same grpc-java as the pserver,
 * tuned: direct executor, 16 MiB flow-control window, 64 MiB messages) and a raw TCP echo server,
 * both on 127.0.0.1. Prints {@code READY grpc=<port> raw=<port>} and runs until stdin closes.
 *
 * <p>Raw protocol: the client sends an 8-byte big-endian length, then that many bytes; the server
 * echoes the bytes back as it reads them.
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
    Server grpc = sb.build().start();
    ServerSocket raw = new ServerSocket(0, 64, InetAddress.getByName("127.0.0.1"));
    Thread acceptor = new Thread(() -> accept(raw), "raw-accept");
    acceptor.setDaemon(true);
    acceptor.start();
    System.out.println("READY grpc=" + grpc.getPort() + " raw=" + raw.getLocalPort());
    System.out.flush();
    // the driver closes our stdin (or dies): then leave
    while (System.in.read() >= 0) {
      // ignore input
    }
    raw.close();
    grpc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private static void accept(ServerSocket raw) {
    while (!raw.isClosed()) {
      try {
        Socket s = raw.accept();
        Thread t = new Thread(() -> serve(s), "raw-echo");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private static void serve(Socket s) {
    byte[] buf = new byte[1 << 20];
    try (s) {
      s.setTcpNoDelay(true);
      InputStream in = new BufferedInputStream(s.getInputStream(), 1 << 16);
      OutputStream out = s.getOutputStream();
      while (true) {
        long len = readLength(in);
        if (len < 0) {
          return;
        }
        while (len > 0) {
          int n = in.read(buf, 0, (int) Math.min(buf.length, len));
          if (n < 0) {
            return;
          }
          out.write(buf, 0, n);
          len -= n;
        }
        out.flush();
      }
    } catch (IOException e) {
      // client went away
    }
  }

  static long readLength(InputStream in) throws IOException {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      int b = in.read();
      if (b < 0) {
        return -1;
      }
      v = (v << 8) | b;
    }
    return v;
  }
}
