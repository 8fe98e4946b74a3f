package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.Poll;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input against real processes (etcd, one master, one pserver, no trainers): every malformed
 * request gets the precise status code and reason and a message naming the thing, the services stay
 * healthy and the pserver's parameters stay bit-for-bit what was initialised. Also: an invalid
 * configuration refuses to start naming the property, and an unreadable checkpoint is survived with
 * a loud warning.
 *
 * <p>The tests pass in any order and alone: the pserver's initialisation and the master's dataset
 * are each set up once, by whichever test needs them first, and what the services answer before
 * that (the "before init" and "before the dataset" cases, and datasets refused as unreadable) is
 * recorded just before and asserted by the tests that are about it.
 */
class BadInputTest {
  private static final Duration RPC = Duration.ofSeconds(20);
  private static final String INIT_ID = "bad-input-init";
  private static final String TRAINER = "bad-input-test";
  // w: 4x5 in blocks of 8 (8, 8, 4 values); b: 3 values in one block
  private static final int W_BLOCK = 8;

  @TempDir static Path dir;
  static LocalCluster cluster;
  static ManagedChannel psChannel;
  static ManagedChannel masterChannel;
  static ParameterServerGrpc.ParameterServerBlockingStub ps;
  static MasterGrpc.MasterBlockingStub master;
  static final Map<String, ByteString> initialBlocks = new LinkedHashMap<>();
  static final List<String> report = new ArrayList<>();
  static ServiceRun badDesired;
  static ServiceRun badLeaseTtl;
  static ServiceRun badCheckpoint;
  static Path garbageCheckpoint;
  // recorded by initialisePserverOnce / setDatasetOnce, before the state they need is gone
  static final Map<String, Throwable> beforeInit = new LinkedHashMap<>();
  static int blocksStored = -1;
  static final Map<String, Throwable> beforeDataset = new LinkedHashMap<>();
  static final Map<String, Path> unreadable = new LinkedHashMap<>();
  static SetDatasetResponse goodDataset;

  @BeforeAll
  static void startCluster() throws Exception {
    cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("bad-input")
                .masters(1)
                .pservers(1)
                .trainers(0)
                .build());
    cluster.start();
    // the invalid configurations start now, in parallel with the rest; checked in their tests
    badDesired =
        ServiceRun.start(
            Role.PSERVER,
            dir.resolve("logs/bad-desired.log"),
            Map.of(
                "paramserver.job", "bad-config",
                "paramserver.etcd.endpoints", cluster.etcdEndpoint(),
                "paramserver.pserver.desired", "0"));
    badLeaseTtl =
        ServiceRun.start(
            Role.MASTER,
            dir.resolve("logs/bad-lease.log"),
            Map.of(
                "paramserver.job", "bad-config",
                "paramserver.etcd.endpoints", cluster.etcdEndpoint(),
                "paramserver.etcd.lease-ttl", "1ms"));
    badCheckpoint = startPserverWithGarbageCheckpoint();
    psChannel = Channels.forAddress("127.0.0.1:" + proc(Role.PSERVER).grpcPort());
    masterChannel = Channels.forAddress("127.0.0.1:" + proc(Role.MASTER).grpcPort());
    ps = ParameterServerGrpc.newBlockingStub(psChannel);
    master = MasterGrpc.newBlockingStub(masterChannel);
    cluster.awaitReady(Role.MASTER, 0, Duration.ofSeconds(60));
  }

  /**
   * A pserver of another job whose etcd checkpoint record points at a garbage file (with the file's
   * right CRC, so that parsing is what fails); started early to overlap its start-up.
   */
  private static ServiceRun startPserverWithGarbageCheckpoint() throws Exception {
    String job = "bad-checkpoint";
    garbageCheckpoint = dir.resolve("garbage-checkpoint.bin");
    byte[] junk = new byte[64];
    Arrays.fill(junk, (byte) 0xff);
    Files.write(garbageCheckpoint, junk);
    CRC32 crc = new CRC32();
    crc.update(junk);
    CheckpointMeta meta =
        CheckpointMeta.newBuilder()
            .setUuid("garbage")
            .setPath(garbageCheckpoint.toString())
            .setCrc32((int) crc.getValue())
            .setStep(42)
            .setTimestampMs(System.currentTimeMillis())
            .build();
    try (Client etcd = Client.builder().endpoints(cluster.etcdEndpoint()).build()) {
      etcd.getKVClient()
          .put(
              ByteSequence.from("/paramserver/" + job + "/checkpoints/0", StandardCharsets.UTF_8),
              ByteSequence.from(meta.toByteArray()))
          .get(30, TimeUnit.SECONDS); // generous: two JVMs are starting beside it
    }
    return ServiceRun.start(
        Role.PSERVER,
        dir.resolve("logs/bad-checkpoint.log"),
        Map.of(
            "paramserver.job",
            job,
            "paramserver.etcd.endpoints",
            cluster.etcdEndpoint(),
            "paramserver.pserver.desired",
            "1",
            "paramserver.pserver.checkpoint-dir",
            dir.resolve("ckpt-bad").toString()));
  }

  @AfterAll
  static void stopCluster() {
    for (ServiceRun r : new ServiceRun[] {badDesired, badLeaseTtl, badCheckpoint}) {
      if (r != null) {
        r.close();
      }
    }
    Channels.close(psChannel);
    Channels.close(masterChannel);
    if (cluster != null) {
      cluster.close();
    }
    report.forEach(line -> System.out.println("BADINPUT " + line));
  }

  private static ProcessInfo proc(Role role) {
    return cluster.process(role, 0);
  }

  private static ParameterServerGrpc.ParameterServerBlockingStub ps() {
    return ps.withDeadlineAfter(RPC.toMillis(), TimeUnit.MILLISECONDS);
  }

  private static MasterGrpc.MasterBlockingStub master() {
    return master.withDeadlineAfter(RPC.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Runs the call, asserts it fails with the code, the reason and a message holding every part. */
  private static StatusRuntimeException expectError(
      String what, ThrowingCallable call, Status.Code code, ErrorReason reason, String... parts) {
    return expectError(what, catchThrowable(call), code, reason, parts);
  }

  /**
   * Asserts that {@code t}, the outcome of a call, is the error with the code, reason and parts.
   */
  private static StatusRuntimeException expectError(
      String what, Throwable t, Status.Code code, ErrorReason reason, String... parts) {
    assertThat(t).as(what + ": must fail").isInstanceOf(StatusRuntimeException.class);
    StatusRuntimeException e = (StatusRuntimeException) t;
    String message = e.getStatus().getDescription();
    report.add(
        String.format(
            "| %s | %s | %s | %s |",
            what,
            e.getStatus().getCode(),
            RpcErrors.reasonOf(e),
            message == null ? "" : message.length() > 260 ? message.substring(0, 260) : message));
    assertThat(e.getStatus().getCode()).as(what + ": code (%s)", message).isEqualTo(code);
    assertThat(RpcErrors.reasonOf(e)).as(what + ": reason (%s)", message).isEqualTo(reason);
    assertThat(message).as(what + ": message").isNotNull();
    for (String part : parts) {
      assertThat(message).as(what + ": message names the thing").contains(part);
    }
    return e;
  }

  // ---------------------------------------------------------------- pserver

  private static ByteString floats(float... v) {
    ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : v) {
      b.putFloat(f);
    }
    return ByteString.copyFrom(b.array());
  }

  private static ParameterSpec spec(String name, long... shape) {
    ParameterSpec.Builder s =
        ParameterSpec.newBuilder()
            .setName(name)
            .setDtype(DataType.FLOAT32)
            .setBlockSize(W_BLOCK)
            .setOptimizer(
                OptimizerConfig.newBuilder()
                    .setKind(OptimizerConfig.Kind.SGD)
                    .setLearningRate(0.1f));
    for (long d : shape) {
      s.addShape(d);
    }
    return s.build();
  }

  private static TensorBlock block(String name, int block, DataType dtype, ByteString data) {
    return TensorBlock.newBuilder()
        .setName(name)
        .setBlock(block)
        .setOffset((long) block * W_BLOCK)
        .setDtype(dtype)
        .setData(data)
        .build();
  }

  private static PushGradientsRequest push(TensorBlock... blocks) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId(TRAINER)
        .addAllGradients(Arrays.asList(blocks))
        .build();
  }

  private static PullParametersRequest pull(String name, int... blocks) {
    PullParametersRequest.Builder r = PullParametersRequest.newBuilder().setTrainerId(TRAINER);
    for (int b : blocks) {
      r.addBlocks(BlockRef.newBuilder().setName(name).setBlock(b));
    }
    return r.build();
  }

  /**
   * Initialises the pserver's shard once, for every test that needs it. Records first what a push
   * and a pull are answered before the initialisation.
   */
  private static synchronized void initialisePserverOnce() {
    if (blocksStored >= 0) {
      return;
    }
    // the pserver's gRPC port opens after its HTTP port, and a channel that found it closed backs
    // off
    Poll.until(
        Duration.ofSeconds(60),
        () -> {
          try {
            ps().getShardStatus(GetShardStatusRequest.getDefaultInstance());
            return true;
          } catch (RuntimeException e) {
            return false;
          }
        },
        "the pserver answers GetShardStatus");
    beforeInit.put(
        "push before init",
        catchThrowable(
            () ->
                ps().pushGradients(
                        push(block("bad.w", 0, DataType.FLOAT32, floats(new float[8]))))));
    beforeInit.put("pull before init", catchThrowable(() -> ps().pullParameters(pull("bad.w", 0))));
    Random rnd = new Random(7);
    float[] w = new float[20];
    for (int i = 0; i < w.length; i++) {
      w[i] = (float) rnd.nextGaussian();
    }
    // values whose bits a lossy path would change
    w[3] = -0.0f;
    w[11] = Float.MIN_VALUE;
    w[19] = Float.intBitsToFloat(0x7f7ffffe);
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder()
            .setTrainerId(TRAINER)
            .setInitId(INIT_ID)
            .addParameters(spec("bad.w", 4, 5))
            .addParameters(spec("bad.b", 3));
    Map<String, ByteString> blocks = new LinkedHashMap<>();
    for (int b = 0; b < 3; b++) {
      ByteString data =
          floats(Arrays.copyOfRange(w, b * W_BLOCK, Math.min(w.length, (b + 1) * W_BLOCK)));
      init.addBlocks(block("bad.w", b, DataType.FLOAT32, data));
      blocks.put("bad.w/" + b, data);
    }
    ByteString bias = floats(0.5f, -1.25f, 3e-39f);
    init.addBlocks(block("bad.b", 0, DataType.FLOAT32, bias));
    blocks.put("bad.b/0", bias);
    int stored = ps().initParameters(init.build()).getBlocks();
    ps().finishInit(
            FinishInitRequest.newBuilder()
                .setTrainerId(TRAINER)
                .setInitId(INIT_ID)
                .setExpectedBlocks(4)
                .build());
    initialBlocks.putAll(blocks);
    blocksStored = stored;
  }

  @Test
  void pserver_beforeInitialisation_pushAndPullAreRefused() {
    initialisePserverOnce();
    expectError(
        "push before init",
        beforeInit.get("push before init"),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_INITIALIZED,
        "not initialised",
        "InitParameters");
    expectError(
        "pull before init",
        beforeInit.get("pull before init"),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_INITIALIZED,
        "not initialised");
  }

  @Test
  void pserver_initialise() {
    initialisePserverOnce();
    assertThat(blocksStored).as("blocks stored").isEqualTo(4);
    assertThat(ps().getShardStatus(GetShardStatusRequest.getDefaultInstance()).getInitialised())
        .as("shard initialised")
        .isTrue();
    assertParametersUnchanged();
  }

  @Test
  void pserver_badPushesAndPulls() {
    initialisePserverOnce();
    expectError(
        "push: wrong element count",
        () -> ps().pushGradients(push(block("bad.w", 0, DataType.FLOAT32, floats(new float[7])))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.SHAPE_MISMATCH,
        "bad.w",
        "8",
        "7");
    expectError(
        "push: unknown parameter",
        () -> ps().pushGradients(push(block("nope", 0, DataType.FLOAT32, floats(new float[8])))),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_PARAMETER,
        "nope");
    expectError(
        "push: unknown block",
        () -> ps().pushGradients(push(block("bad.w", 9, DataType.FLOAT32, floats(new float[8])))),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_PARAMETER,
        "bad.w",
        "9");
    ByteString ints = ByteString.copyFrom(new byte[32]);
    expectError(
        "push: INT32 gradient",
        () -> ps().pushGradients(push(block("bad.w", 0, DataType.INT32, ints))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.UNSUPPORTED_DTYPE,
        "bad.w",
        "INT32");
    float[] nan = new float[8];
    nan[5] = Float.NaN;
    float[] inf = new float[8];
    inf[2] = Float.NEGATIVE_INFINITY;
    expectError(
        "push: NaN gradient",
        () -> ps().pushGradients(push(block("bad.w", 0, DataType.FLOAT32, floats(nan)))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.NON_FINITE_GRADIENT,
        "bad.w");
    // a valid block before the bad one: the whole push is refused, nothing applied
    float[] small = new float[8];
    Arrays.fill(small, 0.25f);
    expectError(
        "push: valid block + Inf gradient",
        () ->
            ps().pushGradients(
                    push(
                        block("bad.w", 0, DataType.FLOAT32, floats(small)),
                        block("bad.w", 1, DataType.FLOAT32, floats(inf)))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.NON_FINITE_GRADIENT,
        "bad.w");
    expectError(
        "pull: unknown parameter",
        () -> ps().pullParameters(pull("nope", 0)),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_PARAMETER,
        "nope");
    expectError(
        "pull: unknown block",
        () -> ps().pullParameters(pull("bad.b", 4)),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_PARAMETER,
        "bad.b",
        "4");
    assertParametersUnchanged();
  }

  @Test
  void pserver_reinitialisationWithAnotherShape_isRefused() {
    initialisePserverOnce();
    InitParametersRequest sameIdOtherShape =
        InitParametersRequest.newBuilder()
            .setTrainerId(TRAINER)
            .setInitId(INIT_ID)
            .addParameters(spec("bad.w", 5, 4))
            .build();
    expectError(
        "InitParameters after FinishInit, other shape",
        () -> ps().initParameters(sameIdOtherShape),
        Status.Code.ALREADY_EXISTS,
        ErrorReason.INIT_CONFLICT,
        "bad.w");
    InitParametersRequest otherInit =
        sameIdOtherShape.toBuilder().setInitId("another-init").build();
    expectError(
        "InitParameters after FinishInit, other init id",
        () -> ps().initParameters(otherInit),
        Status.Code.ALREADY_EXISTS,
        ErrorReason.INIT_CONFLICT,
        INIT_ID,
        "another-init");
    assertParametersUnchanged();
  }

  @Test
  void pserver_messageOverTheInboundCap_isRefused() {
    initialisePserverOnce();
    // 70 MB of zeros in one block of an unknown parameter: refused by the transport (64 MB cap)
    ByteString huge = ByteString.copyFrom(new byte[70 << 20]);
    Throwable t =
        catchThrowable(
            () ->
                ps.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pushGradients(push(block("bad.w", 0, DataType.FLOAT32, huge))));
    assertThat(t).isInstanceOf(StatusRuntimeException.class);
    Status s = ((StatusRuntimeException) t).getStatus();
    report.add(
        String.format(
            "| push: 70 MB message | %s | %s | %s |",
            s.getCode(), RpcErrors.reasonOf(t), s.getDescription()));
    assertThat(s.getCode())
        .as("code (%s)", s.getDescription())
        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    // refused by the transport before the service: no ErrorInfo, so no reason
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.ERROR_REASON_UNSPECIFIED);
    assertThat(s.getDescription())
        .as("message names the limit and the size")
        .contains("gRPC message exceeds maximum size 67108864");
    assertParametersUnchanged();
  }

  /** Pulls every block and compares the raw bytes with what was initialised. */
  private static void assertParametersUnchanged() {
    PullParametersResponse r =
        ps().pullParameters(
                PullParametersRequest.newBuilder()
                    .setTrainerId(TRAINER)
                    .addBlocks(BlockRef.newBuilder().setName("bad.w").setBlock(0))
                    .addBlocks(BlockRef.newBuilder().setName("bad.w").setBlock(1))
                    .addBlocks(BlockRef.newBuilder().setName("bad.w").setBlock(2))
                    .addBlocks(BlockRef.newBuilder().setName("bad.b").setBlock(0))
                    .build());
    Map<String, ByteString> got = new LinkedHashMap<>();
    for (TensorBlock b : r.getBlocksList()) {
      assertThat(b.getDtype())
          .as("dtype of %s/%d", b.getName(), b.getBlock())
          .isEqualTo(DataType.FLOAT32);
      got.put(b.getName() + "/" + b.getBlock(), b.getData());
    }
    assertThat(got).as("parameters bit for bit as initialised").isEqualTo(initialBlocks);
    assertThat(r.getStep()).as("no update applied").isZero();
  }

  // ---------------------------------------------------------------- master

  private static Path recordFile(String name, int records) throws Exception {
    Path f = dir.resolve("data").resolve(name);
    Files.createDirectories(f.getParent());
    try (RecordWriter w = RecordWriter.create(f, Compressor.NONE, 10)) {
      for (int i = 0; i < records; i++) {
        w.write(Example.newBuilder().addDense(i).setLabel(i % 2).build().toByteArray());
      }
    }
    return f;
  }

  private static SetDatasetRequest dataset(String... globs) {
    return SetDatasetRequest.newBuilder().setTrainerId(TRAINER).addAllGlobs(List.of(globs)).build();
  }

  /**
   * Sets the master's dataset once, for every test that needs it. Records first what the master
   * answers before any dataset is set: task calls, and datasets it cannot read.
   */
  private static synchronized void setDatasetOnce() throws Exception {
    if (goodDataset != null) {
      return;
    }
    beforeDataset.put(
        "GetTask",
        catchThrowable(
            () -> master().getTask(GetTaskRequest.newBuilder().setTrainerId(TRAINER).build())));
    beforeDataset.put(
        "TaskFinished",
        catchThrowable(
            () ->
                master()
                    .taskFinished(
                        TaskFinishedRequest.newBuilder()
                            .setTrainerId(TRAINER)
                            .setTaskId(0)
                            .setEpoch(1)
                            .build())));
    Path good = recordFile("good.rio", 100);
    byte[] bytes = Files.readAllBytes(good);
    Path corrupt = dir.resolve("data").resolve("corrupt.rio");
    byte[] garbage = bytes.clone();
    // the header of the first chunk overwritten
    Arrays.fill(garbage, 0, 16, (byte) 0x5a);
    Files.write(corrupt, garbage);
    Path truncated = dir.resolve("data").resolve("truncated.rio");
    Files.write(truncated, Arrays.copyOf(bytes, bytes.length - 7));
    unreadable.put("glob matching nothing", dir.resolve("data").resolve("nothing-*.rio"));
    unreadable.put("corrupt RecordIO file", corrupt);
    unreadable.put("truncated RecordIO file", truncated);
    for (Map.Entry<String, Path> e : unreadable.entrySet()) {
      beforeDataset.put(
          e.getKey(), catchThrowable(() -> master().setDataset(dataset(e.getValue().toString()))));
    }
    goodDataset = master().setDataset(dataset(good.toString()));
  }

  @Test
  void master_beforeTheDataset_tasksAreRefused() throws Exception {
    setDatasetOnce();
    expectError(
        "GetTask before SetDataset",
        beforeDataset.get("GetTask"),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NO_DATASET,
        "SetDataset");
    expectError(
        "TaskFinished before SetDataset",
        beforeDataset.get("TaskFinished"),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NO_DATASET,
        "SetDataset");
  }

  @Test
  void master_unreadableDatasets_areRefused() throws Exception {
    setDatasetOnce();
    String nothing = unreadable.get("glob matching nothing").toString();
    expectError(
        "SetDataset: glob matching nothing",
        beforeDataset.get("glob matching nothing"),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.DATASET_UNREADABLE,
        nothing);
    String corrupt = unreadable.get("corrupt RecordIO file").toString();
    expectError(
        "SetDataset: corrupt RecordIO file",
        beforeDataset.get("corrupt RecordIO file"),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.DATASET_UNREADABLE,
        corrupt,
        "bad magic",
        "offset");
    String truncated = unreadable.get("truncated RecordIO file").toString();
    expectError(
        "SetDataset: truncated RecordIO file",
        beforeDataset.get("truncated RecordIO file"),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.DATASET_UNREADABLE,
        truncated,
        "truncated chunk",
        "offset");
  }

  @Test
  void master_afterTheDataset_unknownTasksAndOtherDatasetsAreRefused() throws Exception {
    setDatasetOnce();
    Path good = dir.resolve("data").resolve("good.rio");
    assertThat(goodDataset.getTasks()).as("tasks of the good dataset").isPositive();
    assertThat(goodDataset.getRecords()).as("records of the good dataset").isEqualTo(100);
    assertThat(master().setDataset(dataset(good.toString())).getAlreadySet())
        .as("the same dataset again is accepted as already set")
        .isTrue();

    long unknown = 1_000_000;
    expectError(
        "TaskFinished: unknown task id",
        () ->
            master()
                .taskFinished(
                    TaskFinishedRequest.newBuilder()
                        .setTrainerId(TRAINER)
                        .setTaskId(unknown)
                        .setEpoch(1)
                        .build()),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_TASK,
        "task " + unknown);
    expectError(
        "TaskFailed: unknown task id",
        () ->
            master()
                .taskFailed(
                    TaskFailedRequest.newBuilder()
                        .setTrainerId(TRAINER)
                        .setTaskId(unknown)
                        .setEpoch(1)
                        .setReason("bad input")
                        .build()),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_TASK,
        "task " + unknown);

    Path other = recordFile("other.rio", 50);
    expectError(
        "SetDataset: another dataset",
        () -> master().setDataset(dataset(other.toString())),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.DATASET_CONFLICT,
        other.toString());
  }

  @Test
  void afterAllBadInput_servicesAreHealthyAndParametersUnchanged() {
    initialisePserverOnce();
    for (Role role : new Role[] {Role.MASTER, Role.PSERVER}) {
      ProcessInfo p = proc(role);
      assertThat(ServiceRun.httpGet(p.httpPort(), "/actuator/health/liveness"))
          .as("%s liveness", p.name())
          .isEqualTo(200);
      assertThat(p.restarts()).as("%s never restarted", p.name()).isZero();
    }
    assertParametersUnchanged();
  }

  // ---------------------------------------------------------------- configuration, checkpoints

  @Test
  void invalidConfiguration_refusesToStartNamingTheProperty() throws Exception {
    int desired = badDesired.awaitExit(Duration.ofSeconds(90));
    assertThat(desired).as("exit code with desired=0; see %s", badDesired.log).isNotZero();
    assertThat(badDesired.output())
        .contains("APPLICATION FAILED TO START")
        .contains("paramserver.pserver.desired");
    report.add("| pserver.desired=0 | exit " + desired + " | " + failureLines(badDesired) + " |");
    int lease = badLeaseTtl.awaitExit(Duration.ofSeconds(90));
    assertThat(lease).as("exit code with lease-ttl=1ms; see %s", badLeaseTtl.log).isNotZero();
    // the failure report names the property in kebab-case, as users write it
    assertThat(badLeaseTtl.output())
        .contains("paramserver.etcd.lease-ttl")
        .contains("must be longer than or equal to 2 seconds");
    report.add("| lease-ttl=1ms | exit " + lease + " | " + failureLines(badLeaseTtl) + " |");
  }

  /** The Property/Value/Reason lines of Spring's failure analysis, on one line. */
  private static String failureLines(ServiceRun run) throws java.io.IOException {
    return run.output()
        .lines()
        .map(String::trim)
        .filter(l -> l.startsWith("Property:") || l.startsWith("Value:") || l.startsWith("Reason:"))
        .collect(java.util.stream.Collectors.joining("; "));
  }

  @Test
  void unreadableCheckpoint_startsUninitialisedWithALoudWarning() throws Exception {
    ServiceRun run = badCheckpoint;
    Awaitility.await("pserver with a garbage checkpoint is live")
        .atMost(Duration.ofSeconds(90))
        .pollInterval(Duration.ofMillis(300))
        .until(() -> ServiceRun.httpGet(run.httpPort, "/actuator/health/liveness") == 200);
    Awaitility.await("the warning is logged")
        .atMost(Duration.ofSeconds(30))
        .until(() -> run.output().contains("UNREADABLE"));
    String out = run.output();
    assertThat(out)
        .contains("CHECKPOINT OF PSERVER 0 AT STEP 42 IS UNREADABLE")
        .contains(garbageCheckpoint + " is not a ShardCheckpoint")
        .contains("pserver 0 has no readable checkpoint: starting uninitialised");
    out.lines()
        .filter(l -> l.contains("UNREADABLE") || l.contains("no readable checkpoint"))
        .forEach(l -> report.add("| garbage checkpoint | log | " + l.strip() + " |"));
    ManagedChannel ch = Channels.forAddress("127.0.0.1:" + run.grpcPort);
    try {
      assertThat(
              ParameterServerGrpc.newBlockingStub(ch)
                  .withDeadlineAfter(RPC.toMillis(), TimeUnit.MILLISECONDS)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance())
                  .getInitialised())
          .as("shard after an unreadable checkpoint")
          .isFalse();
    } finally {
      Channels.close(ch);
    }
    assertThat(run.process.isAlive()).as("still running").isTrue();
    assertThat(ServiceRun.httpGet(run.httpPort, "/actuator/health/liveness")).isEqualTo(200);
  }
}
