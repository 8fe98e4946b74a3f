package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
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
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;

/**
 * Exactly once across live moves, on real processes (etcd, a master, pservers): two clients push
 * integer gradients under SGD with learning rate 1 (exact in float32) to a dense parameter and a
 * sparse table, routed by the committed placement, resending a piece refused with MOVED to its new
 * owner with the same identity and {@code origin}, while {@code psctl scale} takes the job from 2
 * to 3 to 2 pservers. The values pulled at the end equal init − Σ acknowledged gradients bit for
 * bit; in the second test a pserver of each move is killed with {@code kill -9} in the middle of it
 * (and restarted), and the same holds.
 */
class ElasticExactlyOnceTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final int ELEMENTS = 8192;
  private static final int BLOCK = 512;
  private static final int BLOCKS = ELEMENTS / BLOCK;
  private static final String TABLE = "emb";
  private static final int WIDTH = 4;
  private static final int IDS = 20_000;
  private static final String TOKEN = "elastic-test-token";
  private static final String INIT = "elastic-init";

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  private String job;
  private ServiceRun master;
  private final ServiceRun[] pservers = new ServiceRun[3];
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private EtcdCoordinator coordinator;
  private PlacementStore store;
  private final List<BlockSpec> blocks = new ArrayList<>();
  private final float[] expectedDense = new float[ELEMENTS];
  private final Map<Long, float[]> expectedRows = new ConcurrentHashMap<>();
  private final AtomicLong moved = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong pieces = new AtomicLong();
  private final ExecutorService threads = Executors.newFixedThreadPool(4);

  @AfterEach
  void stop() {
    threads.shutdownNow();
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

  @Test
  void twoClientsPushingWhileScaledTwoThreeTwo_valuesAreInitMinusEveryGradient_bitForBit()
      throws Exception {
    run(false);
  }

  @Test
  void killNineOfAPserverInTheMiddleOfEachScaling_valuesAreStillExact() throws Exception {
    run(true);
  }

  private void run(boolean kill) throws Exception {
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
      pservers[i] = startPserver(i, 0);
    }
    master.awaitGrpcListening(Duration.ofSeconds(120));
    for (int i = 0; i < 2; i++) {
      pservers[i].awaitGrpcListening(Duration.ofSeconds(120));
    }
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
    store = new PlacementStore(coordinator);
    for (int b = 0; b < BLOCKS; b++) {
      blocks.add(new BlockSpec("w", b, (long) b * BLOCK, BLOCK));
    }
    initialise();

    AtomicBoolean stop = new AtomicBoolean();
    List<CompletableFuture<Long>> clients = new ArrayList<>();
    for (int c = 0; c < 2; c++) {
      String id = "client-" + c;
      long seed = 17 + c;
      clients.add(CompletableFuture.supplyAsync(() -> pushUntil(stop, id, seed), threads));
    }
    Map<String, String> env =
        Map.of("PSCTL_MASTER", "http://127.0.0.1:" + master.httpPort, "PSCTL_TOKEN", TOKEN);
    AdminClient admin =
        AdminClient.create(
            "the master", "http://127.0.0.1:" + master.httpPort, TOKEN, Duration.ofSeconds(10));
    Thread.sleep(1500);

    pservers[2] = startPserver(2, 0);
    CompletableFuture<String> grow = CompletableFuture.supplyAsync(() -> psctl(env, "3"), threads);
    if (kill) {
      killDuringAMove(admin, 1, "from");
    }
    String grown = grow.get(5, TimeUnit.MINUTES);
    assertThat(grown).contains("done: 3 pservers");
    SlotMap three = currentMap();
    for (int count : three.slotCounts()) {
      assertThat(count)
          .as("slots of each pserver once grown (a rolled-back move is made again): %s", grown)
          .isGreaterThanOrEqualTo(three.slots() / 3);
    }
    Thread.sleep(1000);

    CompletableFuture<String> shrink =
        CompletableFuture.supplyAsync(() -> psctl(env, "2"), threads);
    if (kill) {
      killDuringAMove(admin, 0, "to");
    }
    String shrunk = shrink.get(5, TimeUnit.MINUTES);
    assertThat(shrunk).contains("done: 2 pservers");
    assertThat(pservers[2].awaitExit(Duration.ofMinutes(2)))
        .as("the emptied pserver's exit code")
        .isZero();
    Thread.sleep(1000);
    stop.set(true);
    long steps = 0;
    for (CompletableFuture<Long> c : clients) {
      steps += c.get(3, TimeUnit.MINUTES);
    }

    PlacementStore.Read read = store.read();
    SlotMap map = read.slotMap(SlotMap.initial(blocks, 2));
    assertThat(read.epoch()).isPositive();
    assertThat(map.pservers()).isEqualTo(2);
    int mismatches = compare(map);
    JsonNode scaling = admin.scaling();
    StringBuilder report = new StringBuilder();
    report.append(
        String.format(
            "elastic exactly-once (kill=%s): %d steps from 2 clients, %d pieces, %d resent after"
                + " MOVED, %d duplicates, placement epoch %d%n",
            kill, steps, pieces.get(), moved.get(), duplicates.get(), read.epoch()));
    for (JsonNode m : scaling.path("moves")) {
      report.append(m.toString()).append(System.lineSeparator());
    }
    report.append(grown).append(shrunk);
    System.out.println(report);
    Path out = Path.of("target", "elastic-exactly-once" + (kill ? "-kill" : "") + ".txt");
    Files.createDirectories(out.getParent());
    Files.writeString(out, report.toString());
    assertThat(steps).as("steps pushed").isGreaterThan(20);
    assertThat(mismatches)
        .as("values differing from init - sum of gradients (logs in %s)", dir)
        .isZero();
  }

  private ServiceRun startPserver(int index, int run) throws Exception {
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
    return ServiceRun.start(
        Role.PSERVER, dir.resolve("logs/pserver-" + index + "-" + run + ".log"), props);
  }

  /**
   * Waits until the {@code nth} move (from 0) is under way, kills (-9) its old owner ({@code
   * "from"}) or its new owner ({@code "to"}) and starts it again.
   */
  private void killDuringAMove(AdminClient admin, int nth, String which) throws Exception {
    JsonNode move = null;
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    java.util.Set<String> seen = new java.util.HashSet<>();
    while (System.nanoTime() < deadline) {
      JsonNode m = admin.scaling().path("move");
      if (m.isObject() && seen.add(m.path("id").asString()) && seen.size() > nth) {
        move = m;
        break;
      }
      Thread.sleep(5);
    }
    assertThat(move).as("a move under way").isNotNull();
    int victim = move.path(which).asInt();
    ServiceRun p = pservers[victim];
    p.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    System.out.println("killed pserver " + victim + " in move " + move);
    pservers[victim] = startPserver(victim, 1);
    pservers[victim].awaitGrpcListening(Duration.ofSeconds(120));
  }

  private String psctl(Map<String, String> env, String n) {
    StringWriter out = new StringWriter();
    CommandLine cl = Psctl.commandLine(env);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    int code = cl.execute("scale", "--pservers", n, "--wait-minutes", "4");
    assertThat(code).as("psctl scale --pservers %s: %s", n, out).isZero();
    return out.toString();
  }

  private ParameterServerGrpc.ParameterServerBlockingStub stub(int index) {
    String address =
        coordinator
            .kv()
            .get(coordinator.keys().ps(index))
            .map(kv -> kv.valueAsString())
            .orElse(null);
    if (address == null) {
      throw new IllegalStateException("pserver " + index + " is not registered");
    }
    return ParameterServerGrpc.newBlockingStub(
            channels.computeIfAbsent(address, Channels::forAddress))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  private void initialise() throws Exception {
    SlotMap map = SlotMap.initial(blocks, 2);
    ParameterSpec w =
        ParameterSpec.newBuilder()
            .setName("w")
            .addShape(ELEMENTS)
            .setDtype(DataType.FLOAT32)
            .setBlockSize(BLOCK)
            .setOptimizer(sgd())
            .build();
    ParameterSpec emb =
        ParameterSpec.newBuilder()
            .setName(TABLE)
            .addShape(0)
            .addShape(WIDTH)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setInitStddev(0f)
            .setOptimizer(sgd())
            .build();
    for (int i = 0; i < ELEMENTS; i++) {
      expectedDense[i] = (float) (i % 7 - 3);
    }
    for (int ps = 0; ps < 2; ps++) {
      int server = ps;
      InitParametersRequest.Builder req =
          InitParametersRequest.newBuilder()
              .setTrainerId("init")
              .setInitId(INIT)
              .setMode(TrainingMode.ASYNC)
              .addParameters(w)
              .addParameters(emb);
      int count = 0;
      for (BlockSpec b : blocks) {
        if (map.ownerOfBlock("w", b.block()) == ps) {
          float[] v = new float[BLOCK];
          System.arraycopy(expectedDense, (int) b.offset(), v, 0, BLOCK);
          req.addBlocks(tensor(b.block(), v));
          count++;
        }
      }
      int expected = count;
      Poll.until(
          Duration.ofSeconds(60),
          () -> {
            try {
              stub(server).initParameters(req.build());
              stub(server)
                  .finishInit(
                      FinishInitRequest.newBuilder()
                          .setTrainerId("init")
                          .setInitId(INIT)
                          .setExpectedBlocks(expected)
                          .build());
              return true;
            } catch (RuntimeException e) {
              return false;
            }
          },
          "pserver " + server + " initialised");
    }
  }

  private static OptimizerConfig sgd() {
    return OptimizerConfig.newBuilder()
        .setKind(OptimizerConfig.Kind.SGD)
        .setLearningRate(1f)
        .build();
  }

  private static TensorBlock tensor(int block, float[] values) {
    ByteBuffer buf = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float v : values) {
      buf.putFloat(v);
    }
    buf.flip();
    return TensorBlock.newBuilder()
        .setName("w")
        .setBlock(block)
        .setOffset((long) block * BLOCK)
        .setDtype(DataType.FLOAT32)
        .setData(ByteString.copyFrom(buf))
        .build();
  }

  /** One client: steps of integer gradients until {@code stop}; returns the steps pushed. */
  private long pushUntil(AtomicBoolean stop, String trainer, long seed) {
    Random random = new Random(seed);
    String session = trainer + "-" + System.nanoTime();
    long step = 0;
    while (!stop.get()) {
      step++;
      float[] dense = new float[ELEMENTS];
      int b0 = random.nextInt(BLOCKS);
      for (int b : new int[] {b0, (b0 + 5) % BLOCKS}) {
        for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
          dense[i] = random.nextInt(5) - 2;
        }
      }
      TreeMap<Long, float[]> rows = new TreeMap<>();
      for (int r = 0; r < 64; r++) {
        float[] g = new float[WIDTH];
        for (int k = 0; k < WIDTH; k++) {
          g[k] = random.nextInt(5) - 2;
        }
        rows.put((long) random.nextInt(IDS), g);
      }
      SlotMap map = currentMap();
      AtomicInteger resentParts = new AtomicInteger(1 << 15);
      for (Map.Entry<Integer, PushGradientsRequest> piece :
          split(trainer, session, step, 0, () -> 0, dense, rows, map).entrySet()) {
        send(piece.getValue(), piece.getKey(), dense, rows, resentParts);
      }
      synchronized (expectedDense) {
        for (int i = 0; i < ELEMENTS; i++) {
          expectedDense[i] -= dense[i];
        }
        rows.forEach(
            (id, g) -> {
              float[] e = expectedRows.computeIfAbsent(id, k -> new float[WIDTH]);
              for (int k = 0; k < WIDTH; k++) {
                e[k] -= g[k];
              }
            });
      }
    }
    return step;
  }

  private SlotMap currentMap() {
    return store.read().slotMap(SlotMap.initial(blocks, 2));
  }

  /** The step's gradient cut by owner under {@code map}, each piece with the given origin. */
  private Map<Integer, PushGradientsRequest> split(
      String trainer,
      String session,
      long step,
      int origin,
      IntSupplier parts,
      float[] dense,
      TreeMap<Long, float[]> rows,
      SlotMap map) {
    Map<Integer, PushGradientsRequest.Builder> out = new TreeMap<>();
    for (BlockSpec b : blocks) {
      boolean any = false;
      for (int i = 0; i < BLOCK && !any; i++) {
        any = dense[(int) b.offset() + i] != 0;
      }
      if (!any) {
        continue;
      }
      float[] g = new float[BLOCK];
      System.arraycopy(dense, (int) b.offset(), g, 0, BLOCK);
      out.computeIfAbsent(
              map.ownerOfBlock("w", b.block()), k -> piece(trainer, session, step, origin))
          .addGradients(tensor(b.block(), g));
    }
    long hash = ShardPlacement.tableHash(TABLE);
    Map<Integer, List<Long>> byOwner = new TreeMap<>();
    for (Long id : rows.keySet()) {
      byOwner.computeIfAbsent(map.ownerOfRow(hash, id), k -> new ArrayList<>()).add(id);
    }
    byOwner.forEach(
        (owner, ids) -> {
          ByteBuffer buf =
              ByteBuffer.allocate(4 * WIDTH * ids.size()).order(ByteOrder.LITTLE_ENDIAN);
          for (Long id : ids) {
            for (float v : rows.get(id)) {
              buf.putFloat(v);
            }
          }
          buf.flip();
          out.computeIfAbsent(owner, k -> piece(trainer, session, step, origin))
              .addSparseGradients(
                  SparseRows.newBuilder()
                      .setName(TABLE)
                      .addAllRowIds(ids)
                      .setDtype(DataType.FLOAT32)
                      .setData(ByteString.copyFrom(buf)));
        });
    Map<Integer, PushGradientsRequest> built = new TreeMap<>();
    out.forEach((k, v) -> built.put(k, v.setPart(parts.getAsInt()).build()));
    return built;
  }

  private static PushGradientsRequest.Builder piece(
      String trainer, String session, long step, int origin) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainer)
        .setSession(session)
        .setStep(step)
        .setPart(0)
        .setOrigin(origin);
  }

  /**
   * Sends {@code piece} to pserver {@code dest} until it is acknowledged; a MOVED answer splits it
   * by the placement of the epoch it names and sends each part to its owner, the origin kept and
   * each with a part number of its own from {@code resentParts} (shared by the step's pieces: two
   * pieces of one step may reach one server).
   */
  private void send(
      PushGradientsRequest piece,
      int dest,
      float[] dense,
      TreeMap<Long, float[]> allRows,
      AtomicInteger resentParts) {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (true) {
      try {
        pieces.incrementAndGet();
        if (stub(dest).pushGradients(piece).getDuplicate()) {
          duplicates.incrementAndGet();
        }
        return;
      } catch (RuntimeException e) {
        ErrorReason reason = RpcErrors.reasonOf(e);
        if (reason == ErrorReason.MOVED) {
          moved.incrementAndGet();
          long epoch = Long.parseLong(RpcErrors.metadataOf(e).getOrDefault("epoch", "0"));
          SlotMap map = awaitEpoch(epoch);
          int origin = piece.getOrigin() != 0 ? piece.getOrigin() : dest + 1;
          float[] pieceDense = new float[ELEMENTS];
          for (TensorBlock b : piece.getGradientsList()) {
            System.arraycopy(dense, (int) b.getOffset(), pieceDense, (int) b.getOffset(), BLOCK);
          }
          TreeMap<Long, float[]> pieceRows = new TreeMap<>();
          for (SparseRows r : piece.getSparseGradientsList()) {
            for (long id : r.getRowIdsList()) {
              pieceRows.put(id, allRows.get(id));
            }
          }
          for (Map.Entry<Integer, PushGradientsRequest> sub :
              split(
                      piece.getTrainerId(),
                      piece.getSession(),
                      piece.getStep(),
                      origin,
                      () -> resentParts.getAndIncrement(),
                      pieceDense,
                      pieceRows,
                      map)
                  .entrySet()) {
            send(sub.getValue(), sub.getKey(), dense, allRows, resentParts);
          }
          return;
        }
        if (reason == ErrorReason.WRONG_SHARD
            || reason == ErrorReason.BAD_ARGUMENT
            || reason == ErrorReason.SHAPE_MISMATCH) {
          throw new AssertionError("push refused: " + e.getMessage(), e);
        }
        if (!(e instanceof StatusRuntimeException) && !(e instanceof IllegalStateException)) {
          throw e;
        }
        if (System.nanoTime() > deadline) {
          throw new AssertionError("piece to pserver " + dest + " never acknowledged", e);
        }
        sleep(50);
      }
    }
  }

  /** The committed map once it reaches {@code epoch}, or as it is once that move is gone. */
  private SlotMap awaitEpoch(long epoch) {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (System.nanoTime() < deadline) {
      PlacementStore.Read read = store.read();
      if (read.epoch() >= epoch || read.move().map(m -> m.getEpoch() != epoch).orElse(true)) {
        return read.slotMap(SlotMap.initial(blocks, 2));
      }
      sleep(10);
    }
    throw new AssertionError("placement epoch " + epoch + " never committed nor rolled back");
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Pulls every block and every pushed row from its owner; the count of differing values. */
  private int compare(SlotMap map) {
    int mismatches = 0;
    int blocksSeen = 0;
    Map<Integer, List<Long>> ids = new HashMap<>();
    long hash = ShardPlacement.tableHash(TABLE);
    for (Long id : expectedRows.keySet()) {
      ids.computeIfAbsent(map.ownerOfRow(hash, id), k -> new ArrayList<>()).add(id);
    }
    for (int ps = 0; ps < map.pservers(); ps++) {
      PullParametersRequest.Builder req = PullParametersRequest.newBuilder().setTrainerId("check");
      List<Long> mine = ids.getOrDefault(ps, List.of());
      req.addSparseRows(SparseRowsRef.newBuilder().setName(TABLE).addAllRowIds(mine));
      PullParametersResponse r = stub(ps).pullParameters(req.build());
      PullParametersResponse all =
          stub(ps).pullParameters(PullParametersRequest.newBuilder().setTrainerId("check").build());
      for (TensorBlock b : all.getBlocksList()) {
        assertThat(map.ownerOfBlock(b.getName(), b.getBlock())).isEqualTo(ps);
        blocksSeen++;
        ByteBuffer buf = b.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; buf.hasRemaining(); i++) {
          if (Float.floatToRawIntBits(buf.getFloat())
              != Float.floatToRawIntBits(expectedDense[(int) b.getOffset() + i])) {
            mismatches++;
          }
        }
      }
      for (SparseRows rows : r.getSparseRowsList()) {
        ByteBuffer buf = rows.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        for (long id : rows.getRowIdsList()) {
          float[] e = expectedRows.get(id);
          for (int k = 0; k < WIDTH; k++) {
            if (Float.floatToRawIntBits(buf.getFloat()) != Float.floatToRawIntBits(e[k])) {
              mismatches++;
            }
          }
        }
      }
    }
    assertThat(blocksSeen).as("dense blocks held by their owners").isEqualTo(BLOCKS);
    return mismatches;
  }
}
