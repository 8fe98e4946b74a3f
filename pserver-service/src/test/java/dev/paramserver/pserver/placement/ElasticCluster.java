package dev.paramserver.pserver.placement;

import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.PserverApplication;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.pserver.shard.Requests;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.JobToken;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Pservers of one job on 127.0.0.1, each a real Spring context registered through a real etcd, with
 * raw gRPC stubs to them, the model of the elastic tests (one dense parameter of {@value #BLOCKS}
 * blocks, one sparse table, SGD with learning rate 1) and the job's placement in etcd.
 */
final class ElasticCluster implements AutoCloseable {
  static final String DENSE = "w";
  static final String TABLE = "emb";
  static final int WIDTH = 4;
  static final int BLOCK = 16;
  static final int BLOCKS = 6;
  static final String INIT = "elastic-1";

  final EtcdCoordinator coordinator;
  final PlacementStore store;
  final String job;
  private final EtcdExtension etcd;
  private final Path checkpoints;
  private final Map<Integer, ConfigurableApplicationContext> contexts = new HashMap<>();
  private final Map<Integer, ManagedChannel> channels = new ConcurrentHashMap<>();

  ElasticCluster(EtcdExtension etcd) {
    this.etcd = etcd;
    this.job = etcd.uniqueJob();
    this.checkpoints = TempDirs.create("elastic-ckpt");
    this.coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
    this.store = new PlacementStore(coordinator);
  }

  static List<BlockSpec> blockSpecs() {
    List<BlockSpec> out = new ArrayList<>();
    for (int b = 0; b < BLOCKS; b++) {
      out.add(new BlockSpec(DENSE, b, (long) b * BLOCK, BLOCK));
    }
    return out;
  }

  static float[] initialBlock(int block) {
    float[] v = new float[BLOCK];
    for (int i = 0; i < BLOCK; i++) {
      v[i] = block * 100 + i;
    }
    return v;
  }

  /** Starts pserver {@code index} (its own checkpoint directory) and waits for its claim. */
  void start(int index, int desired) {
    start(index, desired, null);
  }

  /**
   * Starts pserver {@code index}, its own calls to other pservers made through {@code factory}
   * (null: the service's own), and waits for its claim.
   */
  void start(int index, int desired, ChannelFactory factory) {
    Path dir = checkpoints.resolve("ps" + index);
    SpringApplicationBuilder builder = new SpringApplicationBuilder(PserverApplication.class);
    if (factory != null) {
      // the job's token on its calls, as the service's own factory sends it
      List<ClientInterceptor> withToken = new ArrayList<>(factory.interceptors());
      withToken.add(JobToken.attach("tok"));
      ChannelFactory tokened = factory.withInterceptors(withToken);
      builder.initializers(
          ctx -> ctx.getBeanFactory().registerSingleton("channelFactory", tokened));
    }
    ConfigurableApplicationContext ctx =
        builder.run(
            "--server.port=0",
            "--server.address=127.0.0.1",
            "--spring.grpc.server.port=0",
            "--spring.grpc.server.address=127.0.0.1",
            "--paramserver.etcd.endpoints=" + etcd.endpoint(),
            "--paramserver.job=" + job,
            "--paramserver.admin.token=tok",
            "--paramserver.pserver.checkpoint-dir=" + dir,
            "--paramserver.pserver.checkpoint-interval=0s",
            "--paramserver.pserver.move-timeout=10s",
            "--paramserver.pserver.desired=" + desired,
            "--paramserver.pserver.index=" + index);
    contexts.put(index, ctx);
    ShardRegistration registration = ctx.getBean(ShardRegistration.class);
    Poll.until(
        Duration.ofSeconds(30),
        () -> registration.index() == index,
        "pserver " + index + " claimed in etcd");
    ManagedChannel old = channels.remove(index);
    if (old != null) {
      Channels.close(old);
    }
  }

  /** Pserver {@code index}'s checkpoint directory (its write-ahead log is in it too). */
  Path dir(int index) {
    return checkpoints.resolve("ps" + index);
  }

  ConfigurableApplicationContext context(int index) {
    return contexts.get(index);
  }

  /** Closes pserver {@code index}'s context (its registration ends). */
  void stop(int index) {
    ConfigurableApplicationContext ctx = contexts.remove(index);
    if (ctx != null) {
      ctx.close();
    }
    ManagedChannel c = channels.remove(index);
    if (c != null) {
      Channels.close(c);
    }
  }

  void setDesired(int n) {
    coordinator
        .kv()
        .put(coordinator.keys().psDesired(), Integer.toString(n).getBytes(StandardCharsets.UTF_8));
  }

  ManagedChannel channel(int index) {
    return channels.computeIfAbsent(
        index,
        i ->
            // as the master does: with the job's token (internal calls need it)
            Channels.forAddress(
                coordinator.kv().get(coordinator.keys().ps(i)).orElseThrow().valueAsString(),
                JobToken.attach("tok")));
  }

  ParameterServerGrpc.ParameterServerBlockingStub ps(int index) {
    return ParameterServerGrpc.newBlockingStub(channel(index))
        .withDeadlineAfter(20, TimeUnit.SECONDS);
  }

  SlotMovesGrpc.SlotMovesBlockingStub moves(int index) {
    return SlotMovesGrpc.newBlockingStub(channel(index)).withDeadlineAfter(60, TimeUnit.SECONDS);
  }

  /**
   * Pservers 0 and 1 started and initialised, the job asking for three and pserver 2 started: a
   * cluster about to grow from two pservers to three.
   */
  void startGrowingFromTwoToThree() {
    start(0, 2);
    start(1, 2);
    initialise(2);
    setDesired(3);
    start(2, 3);
  }

  /** Initialises pservers 0..n-1 with the blocks the initial map of n gives each. */
  void initialise(int n) {
    for (int i = 0; i < n; i++) {
      initialise(i, n, INIT);
    }
  }

  /** Initialises pserver {@code i} as {@code initId}, with the blocks the map of n gives it. */
  void initialise(int i, int n, String initId) {
    ParameterSpec w = dense(DENSE, BLOCK * BLOCKS, BLOCK, sgd(1));
    ParameterSpec emb =
        ParameterSpec.newBuilder()
            .setName(TABLE)
            .addShape(0)
            .addShape(WIDTH)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setOptimizer(sgd(1))
            .build();
    SlotMap initial = SlotMap.initial(blockSpecs(), n);
    {
      List<TensorBlock> mine = new ArrayList<>();
      for (int b = 0; b < BLOCKS; b++) {
        if (initial.ownerOfBlock(DENSE, b) == i) {
          mine.add(Requests.block(DENSE, b, BLOCK, initialBlock(b)));
        }
      }
      int index = i;
      Poll.until(
          Duration.ofSeconds(30),
          () -> {
            try {
              ps(index).initParameters(init(initId, List.of(w, emb), mine));
              return true;
            } catch (StatusRuntimeException e) {
              return false;
            }
          },
          "InitParameters accepted by pserver " + i);
      ps(i).finishInit(finish(initId, mine.size()));
    }
  }

  /** The committed map (the initial map of {@code n0} while none was committed). */
  SlotMap committed(int n0) {
    return store.read().slotMap(SlotMap.initial(blockSpecs(), n0));
  }

  /** Begins, runs and commits {@code m} at the epoch after {@code cur}'s; returns the new map. */
  SlotMap commit(SlotMap cur, SlotMove m) {
    return runAndCommit(cur, begin(cur, m));
  }

  /** Begins {@code m} in etcd at the epoch after {@code cur}'s; returns the move as begun. */
  SlotMove begin(SlotMap cur, SlotMove m) {
    SlotMove move =
        m.toBuilder()
            .setEpoch(cur.epoch() + 1)
            .setId("m" + (cur.epoch() + 1))
            .setAttempt(cur.epoch() + 1)
            .build();
    assertThat(store.begin(store.read(), move)).as("begin " + move.getId()).isTrue();
    return move;
  }

  /**
   * Runs {@code move}, begun in etcd, on its old owner (MoveOut), commits it and waits until every
   * running pserver serves the new epoch; returns the new map.
   */
  SlotMap runAndCommit(SlotMap cur, SlotMove move) {
    moves(move.getFrom()).moveOut(move);
    SlotMap next = cur.with(move);
    assertThat(store.commit(store.read(), next.toProto())).as("commit " + move.getId()).isTrue();
    for (int i : List.copyOf(contexts.keySet())) {
      Poll.until(
          Duration.ofSeconds(10),
          () -> epochServed(i) == next.epoch(),
          "pserver " + i + " serving epoch " + next.epoch());
    }
    return next;
  }

  long epochServed(int index) {
    return ps(index).getShardStatus(GetShardStatusRequest.getDefaultInstance()).getPlacementEpoch();
  }

  /** Dense block {@code b}'s values, pulled from pserver {@code index}. */
  float[] pullBlock(int index, int b) {
    PullParametersResponse r =
        ps(index)
            .pullParameters(
                PullParametersRequest.newBuilder()
                    .addBlocks(BlockRef.newBuilder().setName(DENSE).setBlock(b))
                    .build());
    return TensorCodec.decode(r.getBlocks(0).getData());
  }

  /** The rows {@code ids} (width floats each), pulled from pserver {@code index}. */
  float[] pullRows(int index, List<Long> ids) {
    PullParametersResponse r =
        ps(index)
            .pullParameters(
                PullParametersRequest.newBuilder()
                    .addSparseRows(SparseRowsRef.newBuilder().setName(TABLE).addAllRowIds(ids))
                    .build());
    return TensorCodec.decode(r.getSparseRows(0).getData());
  }

  @Override
  public void close() {
    for (int i : List.copyOf(contexts.keySet())) {
      try {
        stop(i);
      } catch (RuntimeException e) {
        // closing the others matters more
      }
    }
    channels.values().forEach(Channels::close);
    coordinator.close();
    TempDirs.deleteRecursively(checkpoints);
  }
}
