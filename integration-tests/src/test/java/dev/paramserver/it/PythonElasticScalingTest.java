package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.it.PythonProcesses.Python;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * A Python trainer follows live scaling (docs/explanation/elastic.md, "Trainers"), on real
 * processes (etcd, a master, pservers): the scripted pusher {@code
 * clients/python/tests/e2e/elastic_pusher.py} joins through the master and pushes integer gradients
 * under SGD with learning rate 1 (exact in float32) to a dense parameter and a sparse table,
 * pulling now and then, while {@code psctl scale} takes the job from 2 to 3 to 2 pservers. It
 * routes by the committed placement and resends what a pserver refuses with MOVED; it finishes
 * without an error, and the values pulled at the end (by this test, from the owners the committed
 * map names) equal init − Σ acknowledged gradients bit for bit.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class PythonElasticScalingTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  // as elastic_pusher.py
  private static final int ELEMENTS = 8192;
  private static final int BLOCK = 512;
  private static final int BLOCKS = ELEMENTS / BLOCK;
  private static final String TABLE = "emb";
  private static final int WIDTH = 4;
  private static final int ROWS = 32;
  private static final int IDS = 20_000;
  private static final String TOKEN = "py-elastic-token";

  @TempDir Path dir;

  private String job;
  private ServiceRun master;
  private final ServiceRun[] pservers = new ServiceRun[3];
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private EtcdCoordinator coordinator;
  private Process pusher;

  @AfterEach
  void stop() throws Exception {
    PythonProcesses.kill(pusher);
    channels.values().forEach(Channels::close);
    for (ServiceRun p : pservers) {
      if (p != null) {
        p.close();
      }
    }
    if (master != null) {
      master.close();
    }
    if (coordinator != null) {
      coordinator.close();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.paramserver.it.PythonProcesses#interpreters")
  void pythonTrainerPushingWhileScaledTwoThreeTwo_finishes_valuesAreInitMinusEveryGradient(
      Python interpreter) throws Exception {
    PythonProcesses.assumeUsable(interpreter, dir, false);
    job = etcd.uniqueJob();
    ServiceRun.prepareClassData(Role.PSERVER, dir.resolve("class-data"));
    master =
        ServiceRun.start(
            Role.MASTER,
            dir.resolve("logs/master.log"),
            Map.of(
                "paramserver.job",
                job,
                "paramserver.etcd.endpoints",
                etcd.endpoint(),
                "paramserver.admin.token",
                TOKEN,
                "paramserver.master.scaling.slots-per-move",
                "2048"));
    for (int i = 0; i < 2; i++) {
      pservers[i] = startPserver(i);
    }
    master.awaitGrpcListening(Duration.ofSeconds(120));
    for (int i = 0; i < 2; i++) {
      pservers[i].awaitGrpcListening(Duration.ofSeconds(120));
    }
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));

    Path log = dir.resolve("pushes.log");
    Path out = dir.resolve("pusher.log");
    Path stopFile = dir.resolve("stop");
    pusher =
        PythonProcesses.start(
            interpreter,
            out,
            PythonProcesses.E2E.resolve("elastic_pusher.py").toString(),
            "--master",
            "127.0.0.1:" + master.grpcPort,
            "--trainer-id",
            "py-elastic",
            "--log",
            log.toString(),
            "--stop",
            stopFile.toString(),
            "--min-steps",
            "40");
    Process p = pusher;
    awaitAcked(log, p, out, 20);

    Map<String, String> env =
        Map.of("PSCTL_MASTER", "http://127.0.0.1:" + master.httpPort, "PSCTL_TOKEN", TOKEN);
    pservers[2] = startPserver(2);
    String grown = psctl(env, "3");
    assertThat(grown).contains("done: 3 pservers");
    long afterGrow = acked(log).size();
    awaitAcked(log, p, out, afterGrow + 10);
    String shrunk = psctl(env, "2");
    assertThat(shrunk).contains("done: 2 pservers");
    assertThat(pservers[2].awaitExit(Duration.ofMinutes(1)))
        .as("the emptied pserver's exit code")
        .isZero();
    awaitAcked(log, p, out, acked(log).size() + 10);
    Files.writeString(stopFile, "stop");
    assertThat(p.waitFor(1, TimeUnit.MINUTES)).as("the pusher stops").isTrue();
    assertThat(p.exitValue()).as("the pusher:\n%s", PythonProcesses.tail(out, 40)).isZero();

    Set<Long> sent = lines(log, "sent");
    Set<Long> acked = acked(log);
    assertThat(acked).as("every step sent was acknowledged").isEqualTo(sent);
    PlacementStore.Read read = new PlacementStore(coordinator).read();
    List<BlockSpec> blocks = new ArrayList<>();
    for (int b = 0; b < BLOCKS; b++) {
      blocks.add(new BlockSpec("w", b, (long) b * BLOCK, BLOCK));
    }
    SlotMap map = read.slotMap(SlotMap.initial(blocks, 2));
    assertThat(read.epoch()).as("placement epoch after 2 -> 3 -> 2").isPositive();
    assertThat(map.pservers()).isEqualTo(2);
    int mismatches = compare(map, acked);
    String report =
        String.format(
            "PYTHON-ELASTIC %d steps acknowledged, placement epoch %d; %s%n%s%s",
            acked.size(),
            read.epoch(),
            PythonProcesses.read(out)
                .lines()
                .filter(l -> l.startsWith("PUSHER done"))
                .findFirst()
                .orElse("?"),
            grown,
            shrunk);
    System.out.println(report);
    assertThat(mismatches)
        .as("values differing from init - sum of gradients (logs in %s)\n%s", dir, report)
        .isZero();
  }

  private ServiceRun startPserver(int index) throws Exception {
    Map<String, String> props = new LinkedHashMap<>();
    props.put("paramserver.job", job);
    props.put("paramserver.etcd.endpoints", etcd.endpoint());
    props.put("paramserver.etcd.lease-ttl", "2s");
    props.put("paramserver.admin.token", TOKEN);
    props.put("paramserver.pserver.desired", "2");
    props.put("paramserver.pserver.index", Integer.toString(index));
    props.put(
        "paramserver.pserver.checkpoint-dir", dir.resolve("checkpoints/ps-" + index).toString());
    props.put("paramserver.pserver.checkpoint-interval", "2s");
    return ServiceRun.start(Role.PSERVER, dir.resolve("logs/pserver-" + index + ".log"), props);
  }

  private static void awaitAcked(Path log, Process p, Path out, long count) {
    Poll.until(
        Duration.ofMinutes(1),
        Duration.ofMillis(20),
        () -> acked(log).size() >= count || !p.isAlive(),
        count + " steps acknowledged by the Python pusher");
    assertThat(p.isAlive()).as("the pusher is alive:\n%s", PythonProcesses.tail(out, 40)).isTrue();
  }

  private static Set<Long> acked(Path log) {
    return lines(log, "acked");
  }

  private static Set<Long> lines(Path log, String kind) {
    String text = PythonProcesses.read(log);
    Set<Long> out = new TreeSet<>();
    for (String line : text.substring(0, text.lastIndexOf('\n') + 1).lines().toList()) {
      String[] f = line.split(" ");
      if (f.length == 2 && f[0].equals(kind)) {
        out.add(Long.parseLong(f[1]));
      }
    }
    return out;
  }

  private static String psctl(Map<String, String> env, String n) {
    StringWriter out = new StringWriter();
    CommandLine cl = Psctl.commandLine(env);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    int code = cl.execute("scale", "--pservers", n, "--wait-minutes", "2");
    assertThat(code).as("psctl scale --pservers %s: %s", n, out).isZero();
    return out.toString();
  }

  private ParameterServerGrpc.ParameterServerBlockingStub stub(int index) {
    String address =
        coordinator
            .kv()
            .get(coordinator.keys().ps(index))
            .map(kv -> kv.valueAsString())
            .orElseThrow(() -> new IllegalStateException("pserver " + index + " not registered"));
    return ParameterServerGrpc.newBlockingStub(
            channels.computeIfAbsent(address, Channels::forAddress))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  /** Pulls every block and every pushed row from its owner; the count of differing values. */
  private int compare(SlotMap map, Set<Long> steps) {
    float[] dense = new float[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) {
      dense[i] = i % 7 - 3;
    }
    Map<Long, float[]> rows = new TreeMap<>();
    for (long s : steps) {
      for (long b : new TreeSet<>(List.of(s % BLOCKS, (s + 5) % BLOCKS))) {
        for (long i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
          dense[(int) i] -= (31 * s + i) % 5 - 2;
        }
      }
      for (long r = 0; r < ROWS; r++) {
        float[] e = rows.computeIfAbsent((7919 * s + 104729 * r) % IDS, k -> new float[WIDTH]);
        for (int k = 0; k < WIDTH; k++) {
          e[k] -= (s + r + k) % 5 - 2;
        }
      }
    }
    int mismatches = 0;
    int blocksSeen = 0;
    int rowsSeen = 0;
    Map<Integer, List<Long>> ids = new HashMap<>();
    long hash = ShardPlacement.tableHash(TABLE);
    for (Long id : rows.keySet()) {
      ids.computeIfAbsent(map.ownerOfRow(hash, id), k -> new ArrayList<>()).add(id);
    }
    for (int ps = 0; ps < map.pservers(); ps++) {
      PullParametersResponse all =
          stub(ps).pullParameters(PullParametersRequest.newBuilder().setTrainerId("check").build());
      for (TensorBlock b : all.getBlocksList()) {
        assertThat(map.ownerOfBlock(b.getName(), b.getBlock())).isEqualTo(ps);
        blocksSeen++;
        ByteBuffer buf = b.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; buf.hasRemaining(); i++) {
          if (Float.floatToRawIntBits(buf.getFloat())
              != Float.floatToRawIntBits(dense[(int) b.getOffset() + i])) {
            mismatches++;
          }
        }
      }
      PullParametersResponse r =
          stub(ps)
              .pullParameters(
                  PullParametersRequest.newBuilder()
                      .setTrainerId("check")
                      .addSparseRows(
                          SparseRowsRef.newBuilder()
                              .setName(TABLE)
                              .addAllRowIds(ids.getOrDefault(ps, List.of())))
                      .build());
      for (SparseRows got : r.getSparseRowsList()) {
        ByteBuffer buf = got.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        for (long id : got.getRowIdsList()) {
          rowsSeen++;
          float[] e = rows.get(id);
          for (int k = 0; k < WIDTH; k++) {
            if (Float.floatToRawIntBits(buf.getFloat()) != Float.floatToRawIntBits(e[k])) {
              mismatches++;
            }
          }
        }
      }
    }
    assertThat(blocksSeen).as("dense blocks held by their owners").isEqualTo(BLOCKS);
    assertThat(rowsSeen).as("rows pushed, held by their owners").isEqualTo(rows.size());
    return mismatches;
  }
}
