package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FaultProxy;
import dev.paramserver.testsupport.Poll;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults during slot moves, checked push by push, on real processes (etcd, a master, pservers that
 * each advertise a {@link FaultProxy} of their own): a scripted client ({@link MovingPushClient})
 * pushes to a sparse table, each push on a row of its own, while {@code psctl scale} takes the job
 * from 2 to 3 to 2 pservers {@code -Dmovesoak.rounds} times (default 1). Each move, seen in etcd
 * ({@code placement_move}) after it began and before its commit, gets one fault of a kind dealt
 * with the seed ({@link MoveFaults.Kind}: pause the old or the new owner, partition them, cut the
 * coordinator from the old owner, kill -9 the new or the old owner). Each scaling must end done; at
 * the end every acknowledged push is applied exactly once (a row's value counts its push's
 * applications), lost and doubled counted apart ({@link PushHistory}), and a push never
 * acknowledged is applied at most once. Every failure prints its seed ({@code -Dmovesoak.seed}
 * replays the faults drawn, though not the processes' timing).
 */
class MoveFaultSoakTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final int ROUNDS = Integer.getInteger("movesoak.rounds", 1);

  /** The kinds drawn ({@code -Dmovesoak.faults=KILL_OLD,PAUSE_NEW}; default every kind). */
  private static final List<MoveFaults.Kind> KINDS =
      MoveFaults.kinds(System.getProperty("movesoak.faults", ""));

  private static final String TOKEN = "move-soak-token";

  /** How long a process may take to listen (minutes on a loaded shared machine). */
  private static final Duration STARTUP = Duration.ofMinutes(10);

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  private String job;
  private ServiceRun master;
  private final AtomicReferenceArray<ServiceRun> pservers = new AtomicReferenceArray<>(3);
  private final int[] runs = new int[3];
  private final int[] generations = new int[3];
  private final List<FaultProxy> proxies = new ArrayList<>();
  private EtcdCoordinator coordinator;
  private MovingPushClient client;
  private final ExecutorService threads = Executors.newFixedThreadPool(2);

  @AfterEach
  void stop() {
    if (client != null) {
      client.stop();
      client.close();
    }
    threads.shutdownNow();
    for (int i = 0; i < 3; i++) {
      ServiceRun p = pservers.get(i);
      if (p != null) {
        p.close();
      }
    }
    if (master != null) {
      master.close();
    }
    proxies.forEach(FaultProxy::close);
    if (coordinator != null) {
      coordinator.close();
    }
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES) // bounded by movesoak.rounds plus set-up
  void faultInEachMoveOfTwoThreeTwo_everyAcknowledgedPushAppliedOnce() throws Exception {
    long seed = Long.getLong("movesoak.seed", System.nanoTime());
    System.out.printf(
        Locale.ROOT,
        "MOVESOAK seed=%d rounds=%d faults=%s (replay: -Dmovesoak.seed=%d)%n",
        seed,
        ROUNDS,
        KINDS,
        seed);
    Random random = new Random(seed);
    Map<MoveFaults.Kind, Integer> injected = new EnumMap<>(MoveFaults.Kind.class);
    List<String> log = new ArrayList<>();
    try {
      job = etcd.uniqueJob();
      ServiceRun.prepareClassData(Role.PSERVER, dir.resolve("class-data"));
      for (int i = 0; i < 3; i++) {
        proxies.add(new FaultProxy("move-soak-pserver-" + i));
      }
      master = ServiceRun.start(Role.MASTER, dir.resolve("logs/master.log"), masterProperties());
      for (int i = 0; i < 2; i++) {
        start(i);
      }
      master.awaitGrpcListening(STARTUP);
      for (int i = 0; i < 2; i++) {
        pservers.get(i).awaitGrpcListening(STARTUP);
      }
      coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
      PlacementStore store = new PlacementStore(coordinator);
      long began = System.nanoTime();
      client = new MovingPushClient(coordinator, i -> pservers.get(i).grpcPort, began);
      client.init(2);
      Thread pushing = new Thread(client, "move-soak-client");
      pushing.start();
      MoveFaults faults = new MoveFaults(new Processes(), random);
      Map<String, String> env =
          Map.of("PSCTL_MASTER", "http://127.0.0.1:" + master.httpPort, "PSCTL_TOKEN", TOKEN);
      Poll.until(
          Duration.ofMinutes(3),
          () -> client.steps > 20 || client.failure() != null,
          "the client pushing");
      assertThat(client.failure()).as("the client (seed %d; logs in %s)", seed, dir).isNull();
      for (int round = 0; round < ROUNDS; round++) {
        if (round > 0) {
          generations[2]++; // a fresh pserver 2: the last one was emptied and exited
        }
        start(2);
        pservers.get(2).awaitGrpcListening(STARTUP);
        for (String n : List.of("3", "2")) {
          CompletableFuture<String> scaling =
              CompletableFuture.supplyAsync(() -> psctl(env, n), threads);
          faultEachMove(scaling, store, faults, random, injected, log);
          String out = scaling.get(5, TimeUnit.MINUTES);
          log.add(out);
          assertThat(out).as("psctl scale --pservers %s (seed %d)", n, seed).contains("done: " + n);
        }
        assertThat(pservers.get(2).awaitExit(Duration.ofMinutes(2)))
            .as("the emptied pserver's exit code (seed %d)", seed)
            .isZero();
      }
      client.stop();
      pushing.join(TimeUnit.MINUTES.toMillis(4));
      assertThat(client.failure()).as("the client (seed %d; logs in %s)", seed, dir).isNull();

      PlacementStore.Read read = store.read();
      assertThat(read.move()).as("a move left in etcd").isEmpty();
      SlotMap map = read.slotMap(SlotMap.initial(List.of(), 2));
      Map<Long, Float> values = client.pullRows(map);
      PushHistory.Verdict v = client.history().check(values);
      int faultCount = injected.values().stream().mapToInt(Integer::intValue).sum();
      String line =
          String.format(
              Locale.ROOT,
              "MOVESOAK rounds=%d faults=%d %s placement_epoch=%d steps=%d resent_after_moved=%d"
                  + " gone_as_moved=%d longest_stall=%.1fs seed=%d%n%s",
              ROUNDS,
              faultCount,
              injected,
              read.epoch(),
              client.steps,
              client.moved,
              client.goneAsMoved,
              client.longestStallNanos / 1e9,
              seed,
              PushHistory.report(0, v, seed).replace("SOAK shard 0", "MOVESOAK"));
      System.out.println(line);
      v.examples().forEach(e -> System.out.println("MOVESOAK " + e));
      Path out = Path.of("target", "move-soak-report.txt");
      Files.createDirectories(out.getParent());
      Files.writeString(out, line + System.lineSeparator() + String.join("", log));
      assertThat(faultCount).as("faults injected during moves").isPositive();
      if (v.lost() + v.doubled() > 0) {
        SlotMap before = SlotMap.initial(List.of(), 2);
        long table = ShardPlacement.tableHash(PushHistory.TABLE);
        String groups =
            client
                .history()
                .lostByGroup(
                    values,
                    row ->
                        "pserver "
                            + before.ownerOfRow(table, row)
                            + " -> "
                            + map.ownerOfRow(table, row));
        System.out.println(
            "MOVESOAK acknowledged pushes by owner at the start -> at the end:" + groups);
        log.add("by owner at the start -> at the end:" + groups + System.lineSeparator());
      }
      assertThat(v.lost())
          .as(
              "acknowledged pushes lost (seed %d; logs in %s): %s%nfaults and scalings:%n%s",
              seed, dir, v.examples(), String.join("", log))
          .isZero();
      assertThat(v.doubled())
          .as("pushes applied twice (seed %d; logs in %s): %s", seed, dir, v.examples())
          .isZero();
    } catch (Throwable t) {
      StringBuilder tails = new StringBuilder();
      tails.append(ProcessLogs.tail("master", dir.resolve("logs/master.log"), 60));
      try (var logs = Files.list(dir.resolve("logs"))) {
        for (Path p : logs.filter(p -> p.toString().contains("pserver")).sorted().toList()) {
          tails.append(ProcessLogs.tail(p.getFileName().toString(), p, 60));
        }
      } catch (java.io.IOException e) {
        tails.append("(no logs: ").append(e.getMessage()).append(")");
      }
      System.out.printf(
          Locale.ROOT,
          "MOVESOAK FAILED seed=%d (replay: -Dmovesoak.seed=%d -Dmovesoak.faults=%s) faults so far"
              + " %s; logs in %s%n%s%n%s",
          seed,
          seed,
          KINDS.stream().map(Enum::name).collect(Collectors.joining(",")),
          injected,
          dir,
          String.join("", log),
          tails);
      throw t;
    }
  }

  /**
   * Until {@code scaling} ends: each move seen in etcd gets one fault (its retries none), injected
   * after a short drawn delay if the move is still under way then.
   */
  private void faultEachMove(
      CompletableFuture<String> scaling,
      PlacementStore store,
      MoveFaults faults,
      Random random,
      Map<MoveFaults.Kind, Integer> injected,
      List<String> log)
      throws Exception {
    Set<String> seen = new HashSet<>();
    long began = System.nanoTime();
    while (!scaling.isDone()) {
      Optional<SlotMove> move = store.read().move();
      if (move.isPresent() && seen.add(move.get().getId())) {
        SlotMove m = move.get();
        MoveFaults.Kind kind = faults.next(KINDS);
        long millis = faults.millis(kind);
        long delay = random.nextInt(3) == 0 ? 0 : random.nextInt(100);
        Thread.sleep(delay);
        Optional<SlotMove> now = store.read().move();
        String at = String.format(Locale.ROOT, "+%.1fs", (System.nanoTime() - began) / 1e9);
        if (now.isPresent() && now.get().equals(m)) {
          String done = faults.inject(kind, m.getFrom(), m.getTo(), millis);
          injected.merge(kind, 1, Integer::sum);
          log.add(
              String.format(
                  Locale.ROOT,
                  "MOVESOAK fault at %s after %d ms in move %s attempt %d: %s%n",
                  at,
                  delay,
                  m.getId(),
                  m.getAttempt(),
                  done));
        } else {
          log.add(
              String.format(
                  Locale.ROOT,
                  "MOVESOAK move %s ended within %d ms: no fault%n",
                  m.getId(),
                  delay));
        }
        System.out.print(log.get(log.size() - 1));
      }
      Thread.sleep(5);
    }
  }

  private Map<String, String> masterProperties() {
    Map<String, String> props = new LinkedHashMap<>();
    props.put("paramserver.job", job);
    props.put("paramserver.etcd.endpoints", etcd.endpoint());
    props.put("paramserver.admin.token", TOKEN);
    props.put("paramserver.master.scaling.slots-per-move", "2048");
    props.put("paramserver.master.scaling.move-timeout", "30s");
    props.put("paramserver.master.scaling.retry-delay", "1s");
    props.put("paramserver.master.scaling.poll-interval", "200ms");
    props.put("paramserver.master.scaling.drain-time", "8s");
    return props;
  }

  /** Starts pserver {@code index} (again), its proxy aimed at it. */
  private void start(int index) throws Exception {
    Map<String, String> props = new LinkedHashMap<>();
    props.put("paramserver.job", job);
    props.put("paramserver.etcd.endpoints", etcd.endpoint());
    props.put("paramserver.etcd.lease-ttl", "2s");
    props.put("paramserver.admin.token", TOKEN);
    props.put("paramserver.pserver.desired", "2");
    props.put("paramserver.pserver.index", Integer.toString(index));
    props.put("paramserver.pserver.advertise-port", Integer.toString(proxies.get(index).port()));
    props.put(
        "paramserver.pserver.checkpoint-dir",
        dir.resolve("checkpoints/ps-" + index + "-" + generations[index]).toString());
    props.put("paramserver.pserver.checkpoint-interval", "2s");
    ServiceRun run =
        ServiceRun.start(
            Role.PSERVER,
            dir.resolve(
                "logs/pserver-" + index + "-" + generations[index] + "-" + runs[index]++ + ".log"),
            props);
    proxies.get(index).target(run.grpcPort);
    pservers.set(index, run);
  }

  private String psctl(Map<String, String> env, String n) {
    StringWriter out = new StringWriter();
    var cl = Psctl.commandLine(env);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    int code = cl.execute("scale", "--pservers", n, "--wait-minutes", "4");
    assertThat(code).as("psctl scale --pservers %s: %s", n, out).isZero();
    return out.toString();
  }

  /** The pservers as {@link MoveFaults} acts on them. */
  private final class Processes implements MoveFaults.Pservers {
    @Override
    public long pid(int index) {
      return pservers.get(index).process.pid();
    }

    @Override
    public void killAndRestart(int index) throws Exception {
      ServiceRun p = pservers.get(index);
      p.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      start(index);
      pservers.get(index).awaitGrpcListening(STARTUP);
    }

    @Override
    public FaultProxy proxy(int index) {
      return proxies.get(index);
    }
  }
}
