package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.it.PythonProcesses.Python;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A Python trainer killed with SIGKILL is survived as a Java one is (issue 30), against real etcd,
 * master and pservers: its membership ends at once (its Attend stream broke, the master revokes its
 * lease), the task it held goes back and a Java trainer, started after the kill, finishes the job;
 * and a scripted Python pusher killed at random pushes, continued by new processes with new
 * sessions, loses and doubles no acknowledged push.
 *
 * <p>The Python trainer is the job's only trainer until it is killed: with a Java trainer running
 * from the start, a Python that started slowly (PyTorch's import takes seconds on a loaded machine)
 * could join after the Java trainer had done every task, and then never held one.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class PythonTrainerKillTest {
  private static final int PASSES = 2;
  private static final Pattern TASK = Pattern.compile("^TASK-(TAKEN|DONE) (\\d+) (\\d+)$");

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.paramserver.it.PythonProcesses#interpreters")
  void pythonTrainerKilledHoldingATask_leavesAtOnce_andTheJavaTrainerFinishesEveryTask(
      Python interpreter) throws Exception {
    PythonProcesses.assumeUsable(interpreter, dir, true);
    Path data = dir.resolve("data");
    DemoData.Result demo =
        DemoData.generate(
            data, DemoData.Options.builder().train(12000).test(2000).shards(2).build());
    String train = data + "/train-*.recordio";
    String test = demo.testFile().toString();
    Path pyLog = dir.resolve("py-0.log");
    Process py = null;
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("py-kill-" + interpreter.name())
                .masters(1)
                .pservers(2)
                // the Java trainer is added once py-0 is gone (the class comment says why)
                .trainers(0)
                .trainersThroughMaster(true)
                .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
                .property(Role.MASTER, "paramserver.master.task-records", "1500")
                // far beyond the test: only the departure can hand the killed trainer's task on
                .property(Role.MASTER, "paramserver.master.task-timeout", "30m")
                .property(Role.TRAINER, "paramserver.trainer.train-data", train)
                .property(Role.TRAINER, "paramserver.trainer.test-data", test)
                .property(Role.TRAINER, "paramserver.trainer.model", "mlp")
                .property(Role.TRAINER, "paramserver.trainer.hidden", "32")
                .property(Role.TRAINER, "paramserver.trainer.tasks-per-request", "1")
                .property(Role.TRAINER, "paramserver.trainer.exit-when-done", "false")
                .build())) {
      cluster.start();
      String master = "127.0.0.1:" + cluster.process(Role.MASTER, 0).grpcPort();
      String[] args = MixedLanguageTrainingTest.trainerArgs(master, "py-0", "32", train, test);
      args[0] = PythonProcesses.E2E.resolve("traced_train_mlp.py").toString();
      py = PythonProcesses.start(interpreter, pyLog, args);
      Process python = py;

      // it trained a task and holds the next one
      Poll.until(
          Duration.ofMinutes(3),
          Duration.ofMillis(2),
          () -> heldAfterOneDone(pyLog) != null || !python.isAlive(),
          "py-0 to hold a task after finishing one");
      String held = heldAfterOneDone(pyLog);
      assertThat(held)
          .as("py-0 holds a task; alive %s:\n%s", python.isAlive(), tail(pyLog))
          .isNotNull();
      long killed = System.nanoTime();
      PythonProcesses.kill(py);
      assertThat(py.isAlive()).isFalse();
      assertThat(heldAfterOneDone(pyLog))
          .as("py-0 still held task (pass, id) %s when killed", held)
          .isEqualTo(held);

      // its membership ends at once, and the master takes its task back (not at the 30 min timeout)
      double gone;
      try (EtcdCoordinator coordinator =
          EtcdCoordinator.connect(
              EtcdSettings.of(cluster.etcdEndpoint(), "py-kill-" + interpreter.name()))) {
        Poll.until(
            Duration.ofSeconds(15),
            () -> !PythonProcesses.registeredTrainers(coordinator).contains("py-0"),
            "trainers/py-0 to be deleted");
        gone = (System.nanoTime() - killed) / 1e9;
      }
      Path masterLog = cluster.process(Role.MASTER, 0).log();
      Poll.until(
          Duration.ofSeconds(15),
          () -> PythonProcesses.read(masterLog).contains("trainer 'py-0' is gone"),
          "the master to take py-0's task back (its log: trainer 'py-0' is gone ...)");
      double takenBack = (System.nanoTime() - killed) / 1e9;

      // a Java trainer joins the job py-0 defined and does what is left, the held task included
      cluster.addProcess(Role.TRAINER);
      JobStatusView end = MixedLanguageTrainingTest.awaitEvaluatedEnd(cluster);
      Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
      double accuracy = end.passes().get(PASSES - 1).evalAccuracy();
      Jobs.stopTrainers(cluster);
      String report =
          String.format(
              Locale.ROOT,
              "PYTHON-KILL held task (pass id) %s; trainers/py-0 gone %.2f s and its task taken back"
                  + " %.2f s after kill -9; accuracy %.4f",
              held,
              gone,
              takenBack,
              accuracy);
      System.out.println(report);
      Files.writeString(dir.resolve("report.txt"), report);
      assertThat(gone).as(report).isLessThan(10);
      assertThat(accuracy).as(report).isGreaterThan(0.8);
    } finally {
      PythonProcesses.kill(py);
    }
  }

  /** "pass id" of a task py-0 took and has not finished, once it finished one; else null. */
  private static String heldAfterOneDone(Path log) {
    Set<String> held = new TreeSet<>();
    int done = 0;
    for (String line : PythonProcesses.read(log).lines().toList()) {
      Matcher m = TASK.matcher(line);
      if (m.matches()) {
        String task = m.group(2) + " " + m.group(3);
        if (m.group(1).equals("TAKEN")) {
          held.add(task);
        } else if (held.remove(task)) {
          done++;
        }
      }
    }
    return done >= 1 && !held.isEmpty() ? held.iterator().next() : null;
  }

  // ---- exactly once ----

  private static final int ELEMENTS = 4096;
  private static final int BLOCK = 1024;
  private static final int STEPS = 800;
  private static final int KILLS = 3;

  private static double init(int i) {
    return i % 7 - 3;
  }

  /** The pusher's gradient of step s (exactly_once_pusher.py's GRADIENT). */
  private static double gradient(long s, int i) {
    return (31 * s + i) % 5 - 2;
  }

  @Test
  void pythonPusherKilledAtRandomPushes_newSessionsFinishTheSequence_noPushLostOrDoubled()
      throws Exception {
    PythonProcesses.assumeUsable(dir, false);
    long seed = Long.getLong("pykill.seed", System.nanoTime());
    Random random = new Random(seed);
    Path pushes = dir.resolve("pushes.log");
    String script = PythonProcesses.E2E.resolve("exactly_once_pusher.py").toString();
    Process pusher = null;
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("py-exactly-once")
                .masters(1)
                .pservers(2)
                .trainers(0)
                .trainersThroughMaster(true)
                .build())) {
      cluster.start();
      String master = "127.0.0.1:" + cluster.process(Role.MASTER, 0).grpcPort();
      List<Double> goneSeconds = new ArrayList<>();
      try (EtcdCoordinator etcd =
          EtcdCoordinator.connect(EtcdSettings.of(cluster.etcdEndpoint(), "py-exactly-once"))) {
        for (int run = 0; run <= KILLS; run++) {
          Path out = dir.resolve("pusher-" + run + ".log");
          pusher =
              PythonProcesses.start(
                  out,
                  script,
                  "--master",
                  master,
                  "--trainer-id",
                  "pusher",
                  "--log",
                  pushes.toString(),
                  "--steps",
                  Integer.toString(STEPS),
                  "--elements",
                  Integer.toString(ELEMENTS),
                  "--block",
                  Integer.toString(BLOCK));
          Process p = pusher;
          if (run == KILLS) {
            assertThat(p.waitFor(3, TimeUnit.MINUTES)).as("the last pusher finishes").isTrue();
            assertThat(p.exitValue())
                .as("the last pusher:\n%s", PythonProcesses.tail(out, 30))
                .isZero();
            break;
          }
          long target = Log.read(pushes).lastAcked() + 20 + random.nextInt(150);
          Poll.until(
              Duration.ofMinutes(2),
              Duration.ofMillis(1),
              () -> Log.read(pushes).lastAcked() >= target || !p.isAlive(),
              "pusher run " + run + " to reach step " + target);
          assertThat(p.isAlive())
              .as("pusher run %d:\n%s", run, PythonProcesses.tail(out, 30))
              .isTrue();
          TimeUnit.MICROSECONDS.sleep(random.nextInt(3000));
          long killed = System.nanoTime();
          PythonProcesses.kill(p);
          // the next run may take the id only once the master ended this membership
          Poll.until(
              Duration.ofSeconds(15),
              () -> !PythonProcesses.registeredTrainers(etcd).contains("pusher"),
              "trainers/pusher to be deleted after kill -9");
          goneSeconds.add((System.nanoTime() - killed) / 1e9);
        }
      }

      Log log = Log.read(pushes);
      Set<Long> inFlight = new TreeSet<>(log.sent);
      inFlight.removeAll(log.acked);
      assertThat(log.sent).as("steps sent (each once, by one session)").hasSize(STEPS);
      assertThat(log.duplicateSends).as("steps sent twice").isEmpty();
      assertThat(inFlight)
          .as("steps unacknowledged (one at a time per killed run)")
          .hasSizeLessThanOrEqualTo(KILLS);

      float[] pulled = pull(cluster);
      List<Long> flight = new ArrayList<>(inFlight);
      Map<Integer, Set<Long>> appliedInFlight = new LinkedHashMap<>();
      for (int b = 0; b < ELEMENTS / BLOCK; b++) {
        Set<Long> subset = null;
        for (int mask = 0; mask < 1 << flight.size() && subset == null; mask++) {
          if (blockMatches(b, pulled, log.acked, flight, mask)) {
            subset = new TreeSet<>();
            for (int k = 0; k < flight.size(); k++) {
              if ((mask & 1 << k) != 0) {
                subset.add(flight.get(k));
              }
            }
          }
        }
        assertThat(subset)
            .as(
                "block %d: init - pulled equals the sum of the %d acknowledged gradients plus some of"
                    + " the in-flight steps %s (else a push was lost or doubled); first element: init"
                    + " %s, pulled %s, init - sum(acknowledged) %s; seed %d",
                b,
                log.acked.size(),
                inFlight,
                init(b * BLOCK),
                pulled[b * BLOCK],
                expected(b * BLOCK, log.acked),
                seed)
            .isNotNull();
        appliedInFlight.put(b, subset);
      }
      String report =
          String.format(
              Locale.ROOT,
              "PYTHON-EXACTLY-ONCE steps=%d kills=%d in-flight=%s applied of them by block=%s"
                  + " membership gone after kill (s)=%s seed=%d",
              STEPS,
              KILLS,
              inFlight,
              appliedInFlight,
              goneSeconds.stream().map(s -> String.format(Locale.ROOT, "%.2f", s)).toList(),
              seed);
      System.out.println(report);
      Files.writeString(dir.resolve("report.txt"), report);
      assertThat(goneSeconds).as(report).allMatch(s -> s < 10);
    } finally {
      PythonProcesses.kill(pusher);
    }
  }

  private static double expected(int i, Set<Long> acked) {
    double v = init(i);
    for (long s : acked) {
      v -= gradient(s, i);
    }
    return v;
  }

  /** Whether block b equals init - acknowledged - the in-flight steps in {@code mask}, exactly. */
  private static boolean blockMatches(
      int b, float[] pulled, Set<Long> acked, List<Long> flight, int mask) {
    for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
      double v = expected(i, acked);
      for (int k = 0; k < flight.size(); k++) {
        if ((mask & 1 << k) != 0) {
          v -= gradient(flight.get(k), i);
        }
      }
      if (pulled[i] != v) {
        return false;
      }
    }
    return true;
  }

  /** The parameter {@code w}, pulled from the pservers directly (not through the Python client). */
  private static float[] pull(LocalCluster cluster) throws Exception {
    float[] out = new float[ELEMENTS];
    boolean[] seen = new boolean[ELEMENTS / BLOCK];
    for (int ps = 0; ps < 2; ps++) {
      ManagedChannel channel =
          Channels.forAddress("127.0.0.1:" + cluster.process(Role.PSERVER, ps).grpcPort());
      try {
        PullParametersResponse r =
            ParameterServerGrpc.newBlockingStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .pullParameters(PullParametersRequest.getDefaultInstance());
        for (TensorBlock b : r.getBlocksList()) {
          ByteBuffer buf = b.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
          for (int i = 0; buf.hasRemaining(); i++) {
            out[(int) b.getOffset() + i] = buf.getFloat();
          }
          seen[b.getBlock()] = true;
        }
      } finally {
        Channels.close(channel);
      }
    }
    for (int b = 0; b < seen.length; b++) {
      assertThat(seen[b]).as("block %d pulled from a pserver", b).isTrue();
    }
    return out;
  }

  /**
   * The pushers' log: "sent s" before a step is sent, "acked s" once every pserver acknowledged it.
   */
  private record Log(Set<Long> sent, Set<Long> acked, List<Long> duplicateSends) {
    static Log read(Path path) {
      Set<Long> sent = new TreeSet<>();
      Set<Long> acked = new TreeSet<>();
      List<Long> twice = new ArrayList<>();
      String text = PythonProcesses.read(path);
      // whole lines only: the pusher may be writing the last one
      for (String line : text.substring(0, text.lastIndexOf('\n') + 1).lines().toList()) {
        String[] f = line.split(" ");
        if (f.length == 2 && f[0].equals("sent") && !sent.add(Long.parseLong(f[1]))) {
          twice.add(Long.parseLong(f[1]));
        } else if (f.length == 2 && f[0].equals("acked")) {
          acked.add(Long.parseLong(f[1]));
        }
      }
      return new Log(sent, acked, twice);
    }

    long lastAcked() {
      return acked.isEmpty() ? 0 : ((TreeSet<Long>) acked).last();
    }
  }

  private static String tail(Path log) {
    return PythonProcesses.tail(log, 40);
  }
}
