package dev.paramserver.pserver.replication;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.paramserver.etcd.Lease;
import dev.paramserver.pserver.replication.harness.InMemoryCoordinator;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.ChannelFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Tasks handed to a primary replicator's copier thread: run while it is open; after {@code close()}
 * (a Replicate failing or a watch event racing the shutdown) dropped without a stack trace; refused
 * while open (a defect) reported at ERROR with the rejection.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PrimaryReplicatorCopierTest {
  private final Logger logger = (Logger) LoggerFactory.getLogger(PrimaryReplicator.class);
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
  private final InMemoryCoordinator etcd = new InMemoryCoordinator();
  private Level level;
  @TempDir Path scratch;

  @BeforeEach
  void capture() {
    level = logger.getLevel();
    logger.setLevel(Level.DEBUG);
    logged.start();
    logger.addAppender(logged);
  }

  @AfterEach
  void release() {
    logger.detachAppender(logged);
    logger.setLevel(level);
    etcd.close();
  }

  private PrimaryReplicator replicator(ReplicationClock clock) {
    Lease lease = etcd.grantLease(Duration.ofSeconds(10));
    String key = etcd.keys().ps(0);
    return new PrimaryReplicator(
        new ParameterShard(true),
        ChannelFactory.plaintext(),
        0,
        1,
        Duration.ofSeconds(1),
        new OwnershipCheck(etcd.kv(), key, 1, lease, Duration.ofSeconds(1)),
        new InSyncRecorder(etcd.kv(), key, etcd.keys().psSync(0), 1, 0, clock),
        scratch,
        why -> {},
        new AtomicLong(),
        clock);
  }

  @Test
  void onCopier_whileOpen_runsTheTask() throws Exception {
    PrimaryReplicator r = replicator(ReplicationClock.SYSTEM);
    try {
      CountDownLatch ran = new CountDownLatch(1);
      r.onCopier(ran::countDown, "a task");
      assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
    } finally {
      r.close();
    }
  }

  @Test
  void onCopier_afterClose_dropsTheTaskAtDebug_withoutAStackTrace() {
    PrimaryReplicator r = replicator(ReplicationClock.SYSTEM);
    r.close();
    AtomicBoolean ran = new AtomicBoolean();

    r.onCopier(() -> ran.set(true), "a new copy");

    assertThat(ran).isFalse();
    assertThat(logged.list)
        .filteredOn(e -> e.getFormattedMessage().contains("a new copy"))
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.getLevel()).isEqualTo(Level.DEBUG);
              assertThat(e.getFormattedMessage())
                  .isEqualTo("pserver 0: replication closed, a new copy dropped");
              assertThat(e.getThrowableProxy()).isNull();
            });
    assertThat(logged.list).noneMatch(e -> e.getLevel().isGreaterOrEqual(Level.WARN));
  }

  @Test
  void onCopier_refusedWhileOpen_isReportedAtError_withTheRejection() {
    ReplicationClock stoppedCopier =
        new ReplicationClock() {
          @Override
          public ExecutorService singleThread(String name) {
            ExecutorService e = Executors.newSingleThreadExecutor();
            e.shutdown();
            return e;
          }
        };
    PrimaryReplicator r = replicator(stoppedCopier);
    try {
      r.onCopier(() -> {}, "a new copy");

      assertThat(logged.list)
          .filteredOn(e -> e.getLevel() == Level.ERROR)
          .singleElement()
          .satisfies(
              e -> {
                assertThat(e.getFormattedMessage())
                    .isEqualTo(
                        "pserver 0: the copier refused a new copy while replication is open");
                assertThat(e.getThrowableProxy().getClassName())
                    .isEqualTo(RejectedExecutionException.class.getName());
              });
    } finally {
      r.close();
    }
  }
}
