package dev.paramserver.it;

import static dev.paramserver.it.ScriptedPushes.PARTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.FaultProxy;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * A randomized soak: two shards of a primary and a backup each ({@code replicas=2}, four pserver
 * processes, each reaching etcd through a proxy of its own and advertising a proxy of its own to
 * its primary), and a scripted client per shard pushing small-integer gradients (SGD, learning rate
 * 1) without pause, retrying each part until it is acknowledged, at whichever pserver is the
 * shard's primary. Every few seconds one fault of a kind dealt from a shuffled deck ({@link
 * SoakFaults.Kind}: kills, pauses, partitions from etcd, two-way, long and one-way partitions
 * between primary and backup, overlapping faults, a full disk, an fsync error). Before each fault
 * every shard has a synced backup again.
 *
 * <p>At the end every push identity is checked on its own ({@link PushHistory}): acknowledged and
 * applied once, or never acknowledged and applied at most once; lost and doubled are counted apart.
 * Every shard's pulled values must also equal {@code init - sum of the acknowledged gradients} bit
 * for bit, and its update count the number of pushes acknowledged. It runs {@code -Dsoak.duration}
 * (ISO-8601, default {@code PT2M}; {@code PT1H} for an hour) and reports faults, pushes, lost,
 * doubled and the longest stall (a push's first send to its acknowledgement) in {@code
 * target/soak-report.txt}; every failure prints its seed ({@code -Dsoak.seed} replays the
 * schedule).
 */
class FaultSoakTest {
  private static final Duration DURATION =
      Duration.parse(System.getProperty("soak.duration", "PT2M"));

  /**
   * The kinds of fault drawn ({@code -Dsoak.faults=PAUSE_BACKUP,KILL_PRIMARY}; default every kind):
   * to replay a failure's seed with fewer kinds, or to soak one kind.
   */
  private static final List<SoakFaults.Kind> KINDS = kinds(System.getProperty("soak.faults", ""));

  private static final int SHARDS = 2;
  private static final int PSERVERS = 2 * SHARDS;

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  private static String describeShards(LocalCluster cluster) {
    StringBuilder out = new StringBuilder();
    for (int s = 0; s < SHARDS; s++) {
      out.append(s == 0 ? "" : "; ").append(ShardRoles.describe(cluster, s));
    }
    return out.toString();
  }

  private static List<SoakFaults.Kind> kinds(String names) {
    if (names.isBlank()) {
      return List.of(SoakFaults.Kind.values());
    }
    List<SoakFaults.Kind> kinds = new ArrayList<>();
    for (String n : names.split(",")) {
      kinds.add(SoakFaults.Kind.valueOf(n.trim().toUpperCase(Locale.ROOT)));
    }
    return List.copyOf(kinds);
  }

  /** The scripted client of one shard: its own thread, pushing steps of PARTS parts. */
  private final class ShardClient implements Runnable {
    final int shard;
    final LocalCluster cluster;
    final float[] expected = ScriptedPushes.initial();
    final AtomicLong acknowledged = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    volatile long longestStallNanos;
    volatile boolean stop;
    volatile Throwable failure;
    int port = -1;
    ManagedChannel channel;
    ParameterServerGrpc.ParameterServerFutureStub stub;
    final PushHistory history;

    ShardClient(LocalCluster cluster, int shard, long startNanos) {
      this.cluster = cluster;
      this.shard = shard;
      this.history = new PushHistory(shard, SHARDS, startNanos);
    }

    /** The stub of the primary found last; after a failed call, {@link #findPrimary()}. */
    ParameterServerGrpc.ParameterServerFutureStub primary() throws InterruptedException {
      return stub != null ? stub : findPrimary();
    }

    ParameterServerGrpc.ParameterServerFutureStub findPrimary() throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (true) {
        OptionalInt p = ShardRoles.primaryOf(cluster, shard);
        if (p.isPresent()) {
          int grpc = cluster.process(Role.PSERVER, p.getAsInt()).grpcPort();
          if (grpc != port) {
            Channels.close(channel);
            channel = Channels.forAddress("127.0.0.1:" + grpc);
            port = grpc;
          }
          stub = ParameterServerGrpc.newFutureStub(channel);
          return stub;
        }
        if (System.nanoTime() > deadline) {
          throw new AssertionError("shard " + shard + " has had no primary for 120 s; see " + dir);
        }
        Thread.sleep(100);
      }
    }

    void init() throws Exception {
      ScriptedPushes.await(
          primary()
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .initParameters(PushHistory.withTable(ScriptedPushes.init(expected.clone()))),
          15);
      ScriptedPushes.await(
          primary().withDeadlineAfter(10, TimeUnit.SECONDS).finishInit(ScriptedPushes.finishInit()),
          15);
    }

    @Override
    public void run() {
      try {
        for (long step = 1; !stop; step++) {
          long sent = System.nanoTime();
          ParameterServerGrpc.ParameterServerFutureStub stub = primary();
          List<Future<PushGradientsResponse>> inFlight = new ArrayList<>();
          for (int p = 0; p < PARTS; p++) {
            inFlight.add(
                stub.withDeadlineAfter(5, TimeUnit.SECONDS).pushGradients(history.push(step, p)));
          }
          for (int p = 0; p < PARTS; p++) {
            PushGradientsResponse r;
            try {
              r = ScriptedPushes.await(inFlight.get(p), 10);
              acknowledged(step, p, sent, r);
            } catch (ExecutionException e) {
              failed(step, p, sent, e);
              r = retryUntilAcknowledged(step, p);
            }
            if (r.getDuplicate()) {
              duplicates.incrementAndGet();
            }
            ScriptedPushes.subtract(expected, step, p);
            acknowledged.incrementAndGet();
            longestStallNanos = Math.max(longestStallNanos, System.nanoTime() - sent);
          }
        }
      } catch (Throwable t) {
        failure = t;
      }
    }

    private PushGradientsResponse retryUntilAcknowledged(long step, int part)
        throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
      while (true) {
        long sent = System.nanoTime();
        try {
          PushGradientsResponse r =
              ScriptedPushes.await(
                  findPrimary()
                      .withDeadlineAfter(5, TimeUnit.SECONDS)
                      .pushGradients(history.push(step, part)),
                  10);
          acknowledged(step, part, sent, r);
          return r;
        } catch (ExecutionException e) {
          failed(step, part, sent, e);
          if (System.nanoTime() > deadline) {
            throw new AssertionError(
                "shard " + shard + ": push " + step + "/" + part + " unacknowledged for 180 s", e);
          }
          Thread.sleep(100);
        }
      }
    }

    private void acknowledged(long step, int part, long sent, PushGradientsResponse r) {
      history.attempt(
          step,
          part,
          sent,
          r.getDuplicate() ? PushHistory.Outcome.DUPLICATE : PushHistory.Outcome.ACKNOWLEDGED,
          "");
    }

    private void failed(long step, int part, long sent, ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException s
          && s.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED) {
        history.attempt(
            step, part, sent, PushHistory.Outcome.ERROR, s.getStatus().getCode().name());
      } else {
        history.attempt(step, part, sent, PushHistory.Outcome.NO_ANSWER, "NO_ANSWER");
      }
    }

    /** The history's verdict, from the rows pulled from the shard's primary. */
    PushHistory.Verdict checkHistory() throws Exception {
      List<PullParametersResponse> rows = new ArrayList<>();
      for (PullParametersRequest r : history.pulls()) {
        rows.add(
            ScriptedPushes.await(
                primary().withDeadlineAfter(30, TimeUnit.SECONDS).pullParameters(r), 35));
      }
      return history.check(PushHistory.rowValues(rows));
    }

    float[] pull() throws Exception {
      return ScriptedPushes.values(
          ScriptedPushes.await(
              primary()
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .pullParameters(PullParametersRequest.getDefaultInstance()),
              15));
    }
  }

  @Test
  @Timeout(value = 90, unit = TimeUnit.MINUTES) // bounded by soak.duration plus set-up
  void randomFaults_everyAcknowledgedPushHeldOnce_bitForBit() throws Exception {
    long seed = Long.getLong("soak.seed", System.nanoTime());
    System.out.printf(
        Locale.ROOT, "SOAK seed=%d faults=%s (replay: -Dsoak.seed=%d)%n", seed, KINDS, seed);
    Random random = new Random(seed);
    ClusterSpec.Builder b =
        Jobs.spec(dir.resolve("run"))
            .job("soak")
            .masters(0)
            .trainers(0)
            .pservers(PSERVERS)
            // every kill is meant: the supervisor restarts a pserver however often the soak kills
            // it
            // (its default gives up after 5, which a soak of an hour reaches)
            .maxRestarts(Integer.MAX_VALUE)
            .property(Role.PSERVER, "paramserver.etcd.lease-ttl", "4s")
            .property(Role.PSERVER, "paramserver.pserver.replicas", "2")
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "2s");
    List<SoakFaults.Kind> kinds = new ArrayList<>(KINDS);
    SoakDisks disks = null;
    if (kinds.stream().anyMatch(SoakFaults.Kind::needsDisks)) {
      try {
        disks = SoakDisks.mount(dir.resolve("disks"), PSERVERS);
        for (int i = 0; i < PSERVERS; i++) {
          b.property(Role.PSERVER, i, "paramserver.pserver.wal.dir", disks.walDir(i).toString());
        }
      } catch (java.io.IOException e) {
        System.out.println("SOAK no disk faults (FULL_DISK, FSYNC_ERROR): " + e.getMessage());
        kinds.removeIf(SoakFaults.Kind::needsDisks);
      }
    }
    List<FaultProxy> etcdProxies = new ArrayList<>();
    List<FaultProxy> peerProxies = new ArrayList<>();
    for (int i = 0; i < PSERVERS; i++) {
      FaultProxy etcdProxy = new FaultProxy("soak-etcd-" + i);
      FaultProxy peerProxy = new FaultProxy("soak-pserver-" + i);
      etcdProxies.add(etcdProxy);
      peerProxies.add(peerProxy);
      b.property(Role.PSERVER, i, "paramserver.etcd.endpoints", etcdProxy.endpoint());
      b.property(
          Role.PSERVER,
          i,
          "paramserver.pserver.advertise-port",
          Integer.toString(peerProxy.port()));
    }
    Map<SoakFaults.Kind, Integer> injected = new EnumMap<>(SoakFaults.Kind.class);
    List<ShardClient> clients = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    try (LocalCluster cluster = new LocalCluster(b.build())) {
      String endpoint = cluster.etcdEndpoint();
      int etcdPort = Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
      for (int i = 0; i < PSERVERS; i++) {
        etcdProxies.get(i).target(etcdPort);
        peerProxies.get(i).target(cluster.process(Role.PSERVER, i).grpcPort());
      }
      try {
        cluster.start();
        long began = System.nanoTime();
        for (int s = 0; s < SHARDS; s++) {
          ShardRoles.awaitReplicated(cluster, s, Duration.ofMinutes(3));
          ShardClient c = new ShardClient(cluster, s, began);
          c.init();
          clients.add(c);
          Thread t = new Thread(c, "soak-client-" + s);
          threads.add(t);
          t.start();
        }
        SoakFaults injector = new SoakFaults(cluster, etcdProxies, peerProxies, disks, random);
        long end = System.nanoTime() + DURATION.toNanos();
        while (System.nanoTime() < end && clients.stream().allMatch(c -> c.failure == null)) {
          int shard = random.nextInt(SHARDS);
          ShardRoles.awaitReplicated(cluster, shard, Duration.ofMinutes(3));
          int primary = ShardRoles.primaryOf(cluster, shard).orElse(-1);
          int backup = ShardRoles.syncedBackupOf(cluster, shard).orElse(-1);
          if (primary < 0 || backup < 0) {
            continue; // changed under us; the next round waits again
          }
          SoakFaults.Kind kind = injector.next(kinds);
          long millis = injector.millis(kind);
          double at = (System.nanoTime() - began) / 1e9;
          String done = injector.inject(kind, shard, primary, backup, millis);
          System.out.printf(
              Locale.ROOT,
              "SOAK fault at +%.1fs shard %d (primary %d, backup %d): %s%n",
              at,
              shard,
              primary,
              backup,
              done);
          injected.merge(kind, 1, Integer::sum);
          Thread.sleep(2_000 + random.nextInt(3_000)); // a few seconds between faults
        }
        clients.forEach(c -> c.stop = true);
        for (Thread t : threads) {
          t.join(TimeUnit.MINUTES.toMillis(4));
        }
        StringBuilder report = new StringBuilder();
        List<String> examples = new ArrayList<>();
        long lost = 0;
        long doubled = 0;
        long pushes = 0;
        long stall = 0;
        int mismatches = 0;
        long countDifference = 0;
        for (ShardClient c : clients) {
          assertThat(c.failure).as("client of shard %d (seed %d)", c.shard, seed).isNull();
          ShardRoles.awaitReplicated(cluster, c.shard, Duration.ofMinutes(3));
          int primary = ShardRoles.primaryOf(cluster, c.shard).orElseThrow();
          ShardStatus st =
              ShardRoles.status(cluster.process(Role.PSERVER, primary).grpcPort()).orElseThrow();
          long applied = st.getStep();
          long acked = c.acknowledged.get();
          PushHistory.Verdict v = c.checkHistory();
          String history = PushHistory.report(c.shard, v, seed);
          System.out.println(history);
          report.append(System.lineSeparator()).append(history);
          examples.addAll(v.examples());
          lost += v.lost();
          doubled += v.doubled();
          countDifference += Math.abs(applied - acked);
          pushes += acked;
          stall = Math.max(stall, c.longestStallNanos);
          int m = ScriptedPushes.mismatches(c.pull(), c.expected);
          mismatches += m;
          report.append(
              String.format(
                  Locale.ROOT, " (update count %d, dense elements differing %d)", applied, m));
          Channels.close(c.channel);
        }
        int faults = injected.values().stream().mapToInt(Integer::intValue).sum();
        String line =
            String.format(
                Locale.ROOT,
                "SOAK duration=%s faults=%d %s pushes_acknowledged=%d lost=%d doubled=%d"
                    + " longest_stall=%.1fs seed=%d%s",
                DURATION,
                faults,
                injected,
                pushes,
                lost,
                doubled,
                stall / 1e9,
                seed,
                report);
        System.out.println(line);
        examples.forEach(e -> System.out.println("SOAK " + e));
        Path out = Path.of("target", "soak-report.txt");
        Files.createDirectories(out.getParent());
        Files.writeString(out, line + System.lineSeparator());
        assertThat(faults).as("faults injected").isPositive();
        assertThat(lost)
            .as("acknowledged pushes lost (seed %d; logs in %s): %s", seed, dir, examples)
            .isZero();
        assertThat(doubled)
            .as("pushes applied twice (seed %d; logs in %s): %s", seed, dir, examples)
            .isZero();
        assertThat(countDifference)
            .as("update counts differing from the pushes acknowledged (seed %d; %s)", seed, dir)
            .isZero();
        assertThat(mismatches)
            .as("elements differing from init - sum of acknowledged (seed %d; %s)", seed, dir)
            .isZero();
      } catch (Throwable t) {
        // what the next CI failure needs: the seed, every pserver's role, their logs' tails
        System.out.printf(
            Locale.ROOT,
            "SOAK FAILED seed=%d (replay: -Dsoak.seed=%d -Dsoak.faults=%s) faults so far %s; %s;"
                + " logs in %s%n%s%n%s",
            seed,
            seed,
            KINDS.stream().map(Enum::name).collect(java.util.stream.Collectors.joining(",")),
            injected,
            describeShards(cluster),
            dir,
            disks == null ? "" : disks.usage(),
            ProcessLogs.tails(cluster, Role.PSERVER, 120));
        throw t;
      }
    } finally {
      clients.forEach(c -> c.stop = true);
      etcdProxies.forEach(FaultProxy::close);
      peerProxies.forEach(FaultProxy::close);
      if (disks != null) {
        disks.close(); // after the cluster's processes ended
      }
    }
  }
}
