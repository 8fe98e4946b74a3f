package dev.paramserver.testsupport.grpc;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * In-process gRPC servers for tests, closed by JUnit: register it with {@code @RegisterExtension}
 * and start a server with {@link #start}, which answers a channel to it.
 *
 * <pre>{@code
 * @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();
 *
 * @BeforeEach
 * void setUp() {
 *   stub = MasterGrpc.newBlockingStub(grpc.start(new MasterGrpcService(...)));
 * }
 * }</pre>
 *
 * <p>On an instance field, every server and channel started in a test is shut down after it; on a
 * static field, after the class. Channels close before servers, each within {@value #CLOSE_SECONDS}
 * s, then what {@link #afterServers} names (a service's executor, say). {@link #startDirect} runs
 * calls on the caller's thread.
 */
public final class InProcessGrpc implements BeforeAllCallback, AfterEachCallback, AfterAllCallback {
  private static final int CLOSE_SECONDS = 5;

  /** Registered on a static field: JUnit calls {@link #beforeAll} only then. */
  private boolean perClass;

  private final Deque<ManagedChannel> channels = new ArrayDeque<>();
  private final Deque<Server> servers = new ArrayDeque<>();
  private final Deque<Runnable> afterServers = new ArrayDeque<>();

  /** Starts a server with {@code services} and answers a channel to it. */
  public ManagedChannel start(BindableService... services) {
    return start(
        builder -> {
          for (BindableService s : services) {
            builder.addService(s);
          }
        });
  }

  /** Starts a server with {@code services} (intercepted, for example) and answers a channel. */
  public ManagedChannel start(ServerServiceDefinition... services) {
    return start(
        builder -> {
          for (ServerServiceDefinition s : services) {
            builder.addService(s);
          }
        });
  }

  /**
   * Starts a server with {@code services} whose server and channel both run calls on the thread
   * that makes them ({@code directExecutor}: no thread hand-offs), and answers the channel.
   */
  public ManagedChannel startDirect(ServerServiceDefinition... services) {
    String name =
        startServer(
            builder -> {
              builder.directExecutor();
              for (ServerServiceDefinition s : services) {
                builder.addService(s);
              }
            });
    return channel(name, InProcessChannelBuilder::directExecutor);
  }

  /**
   * Starts a server that {@code configure} sets up (services, executor, interceptors, message
   * limits) and answers a channel to it.
   */
  public ManagedChannel start(Consumer<InProcessServerBuilder> configure) {
    return channel(startServer(configure), builder -> {});
  }

  /**
   * Starts a server that {@code configure} sets up and answers its name, for channels of its own.
   */
  public String startServer(Consumer<InProcessServerBuilder> configure) {
    return startServer(InProcessServerBuilder.generateName(), configure);
  }

  /**
   * Starts a server named {@code name} (an address a test registers, unique in the JVM) that {@code
   * configure} sets up, and answers the name.
   */
  public String startServer(String name, Consumer<InProcessServerBuilder> configure) {
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    configure.accept(builder);
    try {
      servers.push(builder.build().start());
    } catch (IOException e) {
      throw new UncheckedIOException("in-process gRPC server '" + name + "' did not start", e);
    }
    return name;
  }

  /** A new channel to the server {@code name} ({@link #startServer}), closed with the servers. */
  public ManagedChannel channel(String name, Consumer<InProcessChannelBuilder> configure) {
    InProcessChannelBuilder builder = InProcessChannelBuilder.forName(name);
    configure.accept(builder);
    ManagedChannel channel = builder.build();
    channels.push(channel);
    return channel;
  }

  /** Runs {@code cleanUp} once the servers are down (for the executor a service ran on). */
  public void afterServers(Runnable cleanUp) {
    afterServers.push(cleanUp);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    perClass = true;
  }

  @Override
  public void afterEach(ExtensionContext context) throws InterruptedException {
    if (!perClass) {
      close();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws InterruptedException {
    close();
  }

  /**
   * Cuts every channel and server at once without waiting (a process that crashed); {@link #close}
   * still waits for them to end.
   */
  public void shutdownNow() {
    channels.forEach(ManagedChannel::shutdownNow);
    servers.forEach(Server::shutdownNow);
  }

  /**
   * Shuts down every channel, then every server, newest first, then runs the {@link #afterServers}
   * clean-ups; fails if a channel or server does not end.
   */
  public void close() throws InterruptedException {
    List<String> stuck = new ArrayList<>();
    for (ManagedChannel c; (c = channels.poll()) != null; ) {
      if (!c.shutdownNow().awaitTermination(CLOSE_SECONDS, TimeUnit.SECONDS)) {
        stuck.add("channel " + c);
      }
    }
    for (Server s; (s = servers.poll()) != null; ) {
      if (!s.shutdownNow().awaitTermination(CLOSE_SECONDS, TimeUnit.SECONDS)) {
        stuck.add("server " + s);
      }
    }
    for (Runnable r; (r = afterServers.poll()) != null; ) {
      r.run();
    }
    if (!stuck.isEmpty()) {
      throw new AssertionError(
          "in-process gRPC did not end within " + CLOSE_SECONDS + " s: " + stuck);
    }
  }
}
