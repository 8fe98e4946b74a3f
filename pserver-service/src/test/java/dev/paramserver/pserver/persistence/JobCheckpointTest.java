package dev.paramserver.pserver.persistence;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pullAll;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.JobCheckpoint;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.SyncAggregator;
import dev.paramserver.pserver.sync.EtcdTrainerMembership;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Job-wide checkpoints ({@code checkpoint-consistency=job}) of two shards in synchronous mode,
 * trained by two trainers, against a real etcd: both shards cut at the same step, a restart of all
 * pservers restores exactly the values the trainers pulled at that step, an incomplete id is not
 * used, and a shard restarted alone into a running job comes back to its latest state.
 */
class JobCheckpointTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final List<String> TRAINERS = List.of("t1", "t2");

  private EtcdCoordinator coordinator;
  private EtcdTrainerMembership membership;
  private Path dir;
  private ExecutorService pool;
  private final Map<String, Lease> leases = new ConcurrentHashMap<>();
  private final List<Pserver> started = new ArrayList<>();
  // What trainer t1 pulled from both shards after each step: step -> [shard 0 values, shard 1's]
  private final Map<Long, List<float[]>> pulled = new ConcurrentHashMap<>();

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    membership = new EtcdTrainerMembership(coordinator, Duration.ofSeconds(1));
    dir = TempDirs.create("job-checkpoint");
    coordinator.kv().put(coordinator.keys().psDesired(), "2".getBytes(StandardCharsets.UTF_8));
    pool = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() throws Exception {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    for (Pserver p : started) {
      // pservers that "crashed" were never stopped
      try {
        p.service().jobCheckpoints().close();
        p.service().wal().close();
      } catch (RuntimeException e) {
        // closed already by stop()
      }
    }
    leases.values().forEach(Lease::revoke);
    membership.close();
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  private record Pserver(ParameterShard shard, CheckpointService service) {}

  /** A pserver of index {@code index} that claimed it and loaded it, as registration does. */
  private Pserver start(int index) {
    PserverProperties props =
        TestProperties.of(
            dir.resolve("ckpt-" + index).toString(),
            Duration.ZERO,
            new PserverProperties.Wal(
                true,
                WriteAheadLog.SyncMode.NONE,
                Duration.ofMillis(50),
                dir.resolve("wal-" + index)),
            PserverProperties.CheckpointConsistency.JOB);
    ParameterShard shard = new ParameterShard(true);
    shard.attachSync(new SyncAggregator(shard, membership, WAIT));
    CheckpointService service = new CheckpointService(shard, coordinator, props);
    shard.indexFrom(() -> index);
    service.load(index);
    Pserver p = new Pserver(shard, service);
    started.add(p);
    return p;
  }

  /** Shard 0 holds w = [10, 20], shard 1 holds v = [1, 2, 3]; SGD with learning rate 1. */
  private static void initialise(Pserver p0, Pserver p1) {
    p0.shard()
        .init(
            init("s", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 10, 20)))
                .toBuilder()
                .setMode(TrainingMode.SYNC)
                .build());
    p0.shard().finishInit(finish("s", 1));
    p1.shard()
        .init(
            init("s", List.of(dense("v", 3, 3, sgd(1))), List.of(block("v", 0, 3, 1, 2, 3)))
                .toBuilder()
                .setMode(TrainingMode.SYNC)
                .build());
    p1.shard().finishInit(finish("s", 1));
  }

  private void join(String id) {
    Lease lease = coordinator.grantLease(Duration.ofSeconds(5));
    coordinator
        .kv()
        .put(coordinator.keys().trainer(id), "x".getBytes(StandardCharsets.UTF_8), lease);
    leases.put(id, lease);
    Poll.until(WAIT, () -> membership.live().contains(id), "trainer " + id + " seen live");
  }

  private void leaveAll() {
    for (String id : TRAINERS) {
      leases.remove(id).revoke();
    }
    Poll.until(WAIT, () -> membership.live().isEmpty(), "every trainer seen gone");
  }

  private static PushGradientsRequest push(String trainer, long step, String name, float... g) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainer)
        .setSession("run-" + trainer)
        .setStep(step)
        .addGradients(gradient(name, 0, g))
        .build();
  }

  private static float[] values(ParameterShard shard) {
    return dev.paramserver.tensor.TensorCodec.decode(shard.pull(pullAll()).getBlocks(0).getData());
  }

  /**
   * Trains steps {@code from..to}: each trainer pushes small integer gradients to both shards each
   * step (synchronous: a push returns once its step was applied); t1 then pulls both shards.
   */
  private void train(Pserver p0, Pserver p1, long from, long to) throws Exception {
    List<Future<?>> running = new ArrayList<>();
    for (int t = 0; t < TRAINERS.size(); t++) {
      String id = TRAINERS.get(t);
      float g = t + 1;
      running.add(
          pool.submit(
              () -> {
                for (long s = from; s <= to; s++) {
                  p0.shard().push(push(id, s, "w", g, -g));
                  p1.shard().push(push(id, s, "v", g, 2 * g, -g));
                  if (id.equals("t1")) {
                    // t2 cannot complete step s+1 without t1: the shards are at step s
                    pulled.put(s, List.of(values(p0.shard()), values(p1.shard())));
                  }
                }
                return null;
              }));
    }
    for (Future<?> f : running) {
      f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }

  /** Pserver 0 proposes a job-wide checkpoint; returns once pserver 1 aims at it too. */
  private static JobCheckpoint propose(Pserver p0, Pserver p1) {
    JobCheckpoint head = p0.service().proposeJobCheckpoint().orElseThrow();
    Poll.until(
        WAIT,
        () -> p1.service().jobCheckpoints().target().isPresent(),
        "pserver 1 aims at the job-wide checkpoint");
    return head;
  }

  private static ShardCheckpoint read(CheckpointMeta meta) throws Exception {
    return CheckpointStore.read(meta.getPath(), meta.getCrc32());
  }

  @Test
  void allShardsCutAtOneStep_andARestartOfAllPserversRestoresExactlyThatStep() throws Exception {
    TRAINERS.forEach(this::join);
    Pserver p0 = start(0);
    Pserver p1 = start(1);
    initialise(p0, p1);
    train(p0, p1, 1, 5);

    JobCheckpoint head = propose(p0, p1);
    assertThat(head.getStep()).isGreaterThan(5);
    train(p0, p1, 6, head.getStep() + 10);
    p0.service().jobCheckpoints().awaitWrites();
    p1.service().jobCheckpoints().awaitWrites();

    JobCheckpoints.Complete complete = p0.service().jobCheckpoints().newestComplete().orElseThrow();
    assertThat(complete.id()).isEqualTo(head.getId());
    assertThat(complete.step()).isEqualTo(head.getStep());
    assertThat(complete.shards()).containsOnlyKeys(0, 1);
    long s = head.getStep();
    assertThat(read(complete.shards().get(0)).getStep()).isEqualTo(s);
    assertThat(read(complete.shards().get(1)).getStep()).isEqualTo(s);
    // the trainers went on past the cut
    assertThat(p0.shard().step()).isEqualTo(s + 10);
    assertThat(p1.shard().step()).isEqualTo(s + 10);

    // an incomplete, newer id (shard 1 never recorded its part) must not be restored
    CheckpointMeta newest0 =
        CheckpointMeta.parseFrom(
            coordinator.kv().get(coordinator.keys().checkpoint(0)).orElseThrow().value());
    long incomplete = head.getId() + 1;
    coordinator
        .kv()
        .put(
            coordinator.keys().jobCheckpoint(incomplete),
            head.toBuilder().setId(incomplete).setStep(newest0.getStep()).build().toByteArray());
    coordinator
        .kv()
        .put(coordinator.keys().jobCheckpointShard(incomplete, 0), newest0.toByteArray());

    // the job stops: trainers gone, both pservers stop (each writes a final checkpoint at s + 10)
    leaveAll();
    p0.service().stop();
    p1.service().stop();
    // the job restarts: its trainers may register before its pservers load
    TRAINERS.forEach(this::join);

    Pserver r0 = start(0);
    Pserver r1 = start(1);

    assertThat(r0.shard().step()).isEqualTo(s);
    assertThat(r1.shard().step()).isEqualTo(s);
    // bit for bit what t1 pulled at step s
    assertThat(values(r0.shard())).containsExactly(pulled.get(s).get(0));
    assertThat(values(r1.shard())).containsExactly(pulled.get(s).get(1));
    // w = [10, 20] - s * (1 + 2) * [1, -1]: exact in float32
    assertThat(values(r0.shard())).containsExactly(10f - 3 * s, 20f + 3 * s);

    // a shard restarted alone afterwards comes back to the restored state plus what followed
    train(r0, r1, s + 11, s + 12);
    float[] latest = values(r1.shard());
    Pserver again = start(1); // crash of pserver 1: nothing stopped or closed
    assertThat(again.shard().step()).isEqualTo(s + 2);
    assertThat(values(again.shard())).containsExactly(latest);
  }

  @Test
  void aShardRestartedAloneIntoARunningJob_loadsItsLatestStateNotTheJobCheckpoint()
      throws Exception {
    TRAINERS.forEach(this::join);
    Pserver p0 = start(0);
    Pserver p1 = start(1);
    initialise(p0, p1);
    train(p0, p1, 1, 3);
    JobCheckpoint head = propose(p0, p1);
    train(p0, p1, 4, head.getStep() + 4);
    // each shard cuts its part on its own writer thread: wait for both parts
    p0.service().jobCheckpoints().awaitWrites();
    p1.service().jobCheckpoints().awaitWrites();
    Poll.until(
        WAIT,
        () -> p0.service().jobCheckpoints().newestComplete().isPresent(),
        "both shards recorded their part of the job-wide checkpoint");
    float[] latest = values(p1.shard());

    Pserver again = start(1); // crash of pserver 1 while the trainers are registered

    assertThat(again.shard().step()).isEqualTo(head.getStep() + 4);
    assertThat(values(again.shard())).containsExactly(latest);
  }
}
