package dev.paramserver.bench.wire;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The bare gRPC baseline's client: {@code size} bytes as messages of at most {@link #CHUNK} bytes,
 * all in flight at once, on a channel tuned like the server (direct executor, 16 MiB window). ECHO
 * moves the bytes both ways, SINK only up, SOURCE only down. As an {@link AsyncOp}, several
 * operations are kept in flight on the one channel.
 */
final class GrpcEchoOps implements Op, AsyncOp {
  static final int CHUNK = Integer.getInteger("bench.echo.chunk", 1 << 20);

  private final ManagedChannel channel;
  private final MethodDescriptor<byte[], byte[]> method;
  private final List<byte[]> requests = new ArrayList<>();

  GrpcEchoOps(int port, MethodDescriptor<byte[], byte[]> method, int size) {
    NettyChannelBuilder cb =
        NettyChannelBuilder.forAddress("127.0.0.1", port)
            .usePlaintext()
            .maxInboundMessageSize(EchoServerMain.MAX_MESSAGE);
    if (Boolean.parseBoolean(System.getProperty("bench.echo.direct", "true"))) {
      cb.directExecutor();
    }
    int window = Integer.getInteger("bench.echo.window", EchoServerMain.WINDOW);
    if (window > 0) {
      cb.flowControlWindow(window);
    }
    // a development aid (WireProbe): BDP auto-tuning kept on from this initial window
    int initial = Integer.getInteger("bench.echo.initialWindow", 0);
    if (initial > 0) {
      cb.initialFlowControlWindow(initial);
    }
    this.channel = cb.build();
    this.method = method;
    for (int off = 0; off < size; off += CHUNK) {
      int n = Math.min(CHUNK, size - off);
      requests.add(method == EchoProtocol.SOURCE ? EchoProtocol.sizeRequest(n) : new byte[n]);
    }
  }

  @Override
  public void run() throws Exception {
    if (requests.size() == 1) {
      ClientCalls.blockingUnaryCall(
          channel,
          method,
          CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
          requests.get(0));
      return;
    }
    List<ListenableFuture<byte[]>> futures = new ArrayList<>(requests.size());
    for (byte[] r : requests) {
      futures.add(
          ClientCalls.futureUnaryCall(
              channel.newCall(method, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS)),
              r));
    }
    for (ListenableFuture<byte[]> f : futures) {
      f.get();
    }
  }

  @Override
  public void start(Completion c) {
    AtomicInteger left = new AtomicInteger(requests.size());
    AtomicBoolean failed = new AtomicBoolean();
    for (byte[] r : requests) {
      Futures.addCallback(
          ClientCalls.futureUnaryCall(
              channel.newCall(method, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS)),
              r),
          new FutureCallback<byte[]>() {
            @Override
            public void onSuccess(byte[] result) {
              if (left.decrementAndGet() == 0) {
                c.done();
              }
            }

            @Override
            public void onFailure(Throwable t) {
              if (failed.compareAndSet(false, true)) {
                c.failed(t);
              }
            }
          },
          MoreExecutors.directExecutor());
    }
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
