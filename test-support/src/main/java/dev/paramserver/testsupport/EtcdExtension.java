package dev.paramserver.testsupport;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs one real etcd for a test class.
 *
 * <pre>{@code
 * @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
 * ... EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()) ...
 * }</pre>
 *
 * The server starts before the first test and stops (data deleted) after the last. Use {@link
 * #uniqueJob()} in each test so tests do not see each other's keys.
 */
public final class EtcdExtension implements BeforeAllCallback, AfterAllCallback {
  private static final AtomicInteger COUNTER = new AtomicInteger();
  private final String runId = UUID.randomUUID().toString().substring(0, 8);
  private volatile EtcdServer server;

  @Override
  public void beforeAll(ExtensionContext context) {
    if (server == null) {
      server = EtcdServer.start();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    EtcdServer s = server;
    server = null;
    if (s != null) {
      s.stop();
    }
  }

  /** The running server (to pause, kill or restart it in fault tests). */
  public EtcdServer server() {
    EtcdServer s = server;
    if (s == null) {
      throw new IllegalStateException(
          "etcd is not started: register EtcdExtension on a static field with @RegisterExtension");
    }
    return s;
  }

  /** The client URL of the running server. */
  public String endpoint() {
    return server().endpoint();
  }

  /** A job name no other test in this JVM uses, valid for {@code JobKeys}. */
  public String uniqueJob() {
    return "test-" + runId + "-" + COUNTER.incrementAndGet();
  }
}
