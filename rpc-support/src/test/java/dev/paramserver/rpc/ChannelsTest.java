package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ChannelsTest {
  private static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        }
      };
  private static final MethodDescriptor<byte[], byte[]> METHOD =
      MethodDescriptor.<byte[], byte[]>newBuilder(BYTES, BYTES)
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("test.Missing/Call")
          .build();

  private Server server;
  private final List<String> seen = new CopyOnWriteArrayList<>();

  @BeforeEach
  void startServer() throws IOException {
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).build().start();
  }

  @AfterEach
  void stopServer() throws InterruptedException {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private ClientInterceptor recording(String name) {
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(
          MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        seen.add(name + ":" + method.getFullMethodName());
        return next.newCall(method, options);
      }
    };
  }

  private void call(ManagedChannel channel) {
    try {
      assertThatThrownBy(
              () ->
                  ClientCalls.blockingUnaryCall(
                      channel,
                      METHOD,
                      CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS),
                      new byte[0]))
          .isInstanceOf(StatusRuntimeException.class)
          .hasMessageContaining("UNIMPLEMENTED");
    } finally {
      Channels.close(channel);
    }
  }

  @Test
  void interceptorsRunInTheOrderGiven() {
    call(Channels.forAddress("127.0.0.1:" + server.getPort(), recording("a"), recording("b")));
    assertThat(seen).containsExactly("a:test.Missing/Call", "b:test.Missing/Call");
  }

  @Test
  void factoryInterceptorsApplyToEveryChannelItBuilds_inTheOrderGiven() {
    ChannelFactory factory =
        ChannelFactory.plaintext().withInterceptors(List.of(recording("x"), recording("y")));
    call(factory.forAddress("127.0.0.1:" + server.getPort()));
    call(factory.forAddress("127.0.0.1:" + server.getPort()));
    call(Channels.forAddress("127.0.0.1:" + server.getPort()));
    assertThat(seen)
        .containsExactly(
            "x:test.Missing/Call",
            "y:test.Missing/Call",
            "x:test.Missing/Call",
            "y:test.Missing/Call");
    assertThat(factory.tls()).isNull();
    assertThat(ChannelFactory.plaintext().interceptors()).isEmpty();
  }

  @Test
  void factory_rejectsAMalformedAddress_namingIt() {
    assertThatThrownBy(() -> ChannelFactory.plaintext().forAddress("nohost"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'nohost' is not host:port");
  }
}
