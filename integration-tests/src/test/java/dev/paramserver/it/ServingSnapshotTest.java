package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.JobCheckpoint;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ServingPullRequest;
import dev.paramserver.proto.v1.ServingSource;
import dev.paramserver.proto.v1.ServingStatus;
import dev.paramserver.proto.v1.ServingStatusRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.checkpoint.CheckpointPointers;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A serving replica (real Spring context, real gRPC and HTTP, real etcd) without a running job: it
 * starts from the newest complete job-wide checkpoint (files as pservers write them, an incomplete
 * newer id ignored), is pinned to an older one and back through {@code /admin/serving/pin}; and one
 * serves a saved model file with no etcd at all.
 */
@ExtendWith(PlainLogging.class)
class ServingSnapshotTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final String TABLE = "emb";
  private static final int WIDTH = 4;
  private static final long[] IDS = {1, 2, 3, 4, 5, 6, 7, 8};

  /** The value checkpoint {@code k} holds at element {@code j} of row {@code id}. */
  private static float value(int k, long id, int j) {
    return k * 100 + id + j * 0.25f;
  }

  /** Shard {@code index} of 2 as job-wide checkpoint {@code k} holds it, cut at {@code step}. */
  private static ShardCheckpoint shard(int k, int index, long step) {
    ParameterSpec emb =
        ParameterSpec.newBuilder()
            .setName(TABLE)
            .addShape(0)
            .addShape(WIDTH)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setOptimizer(
                OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(1f))
            .build();
    SparseRows.Builder rows = SparseRows.newBuilder().setName(TABLE).setDtype(DataType.FLOAT32);
    List<Float> values = new java.util.ArrayList<>();
    for (long id : IDS) {
      if (ShardPlacement.ownerOfRow(TABLE, id, 2) == index) {
        rows.addRowIds(id);
        for (int j = 0; j < WIDTH; j++) {
          values.add(value(k, id, j));
        }
      }
    }
    float[] data = new float[values.size()];
    for (int i = 0; i < data.length; i++) {
      data[i] = values.get(i);
    }
    rows.setData(TensorCodec.encode(data));
    ParameterShard s = new ParameterShard(false);
    s.init(
        InitParametersRequest.newBuilder()
            .setTrainerId("t")
            .setInitId("i1")
            .addParameters(emb)
            .addSparseRows(rows)
            .build());
    s.finishInit(FinishInitRequest.newBuilder().setTrainerId("t").setInitId("i1").build());
    return s.snapshot().toBuilder().setStep(step).build();
  }

  private static final CheckpointPointers IN_MEMORY =
      new CheckpointPointers() {
        @Override
        public Optional<Pointer> read(int index) {
          return Optional.empty();
        }

        @Override
        public boolean replace(int index, long version, CheckpointMeta meta) {
          return true;
        }

        @Override
        public String where(int index) {
          return "memory";
        }
      };

  /** Writes job-wide checkpoint {@code k} at {@code step} as pservers do: files, then keys. */
  private static void writeJobCheckpoint(
      EtcdCoordinator c, CheckpointStore files, int k, long step, int shardsWritten) {
    c.kv()
        .put(
            c.keys().jobCheckpoint(k),
            JobCheckpoint.newBuilder()
                .setId(k)
                .setStep(step)
                .setShards(2)
                .setInitId("i1")
                .build()
                .toByteArray());
    for (int i = 0; i < shardsWritten; i++) {
      CheckpointMeta meta = files.write(i, shard(k, i, step));
      assertThat(meta.getStep()).isEqualTo(step);
      c.kv().put(c.keys().jobCheckpointShard(k, i), meta.toByteArray());
    }
  }

  private static LookupResponse lookup(ServingGrpc.ServingBlockingStub stub) {
    return stub.withDeadlineAfter(10, TimeUnit.SECONDS)
        .lookup(
            LookupRequest.newBuilder()
                .setTable(TABLE)
                .setWidth(WIDTH)
                .addAllIds(java.util.Arrays.stream(IDS).boxed().toList())
                .build());
  }

  private static void assertHolds(LookupResponse r, int k) {
    float[] got = TensorCodec.decode(r.getValues());
    for (int i = 0; i < IDS.length; i++) {
      for (int j = 0; j < WIDTH; j++) {
        assertThat(got[i * WIDTH + j]).as("id %d [%d]", IDS[i], j).isEqualTo(value(k, IDS[i], j));
      }
    }
    assertThat(r.getDefaultedList()).isEmpty();
  }

  private static HttpResponse<String> admin(String method, String url) throws Exception {
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(url))
            .header("Authorization", "Bearer tok")
            .method(method, HttpRequest.BodyPublishers.noBody())
            .timeout(Duration.ofSeconds(30))
            .build();
    return HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void withoutARunningJob_servesTheNewestCompleteCheckpoint_andPinsAnOlderOneAndBack()
      throws Exception {
    String job = etcd.uniqueJob();
    Path dir = TempDirs.create("serving-jobckpt");
    int grpcPort = FreePorts.next();
    ConfigurableApplicationContext serving = null;
    ManagedChannel ch = null;
    try (EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      // the first call after connecting may be slow on a loaded machine
      assertThat(c.awaitConnected(Duration.ofSeconds(60))).isTrue();
      CheckpointStore files = new CheckpointStore(IN_MEMORY, dir);
      writeJobCheckpoint(c, files, 1, 10, 2);
      writeJobCheckpoint(c, files, 2, 20, 2);
      writeJobCheckpoint(c, files, 3, 30, 1); // incomplete: shard 1's file missing
      // no ps_desired, no pserver: the job ended; the shard count comes from the checkpoint
      serving =
          ServingContexts.start(
              grpcPort,
              "--paramserver.etcd.endpoints=" + etcd.endpoint(),
              "--paramserver.job=" + job);
      String http = ServingContexts.http(serving);
      ch = Channels.forAddress("127.0.0.1:" + grpcPort);
      var stub = ServingGrpc.newBlockingStub(ch);
      Poll.until(
          Duration.ofSeconds(30),
          () -> stub.getServingStatus(ServingStatusRequest.getDefaultInstance()).hasVersion(),
          "the replica serves a version");

      LookupResponse first = lookup(stub);
      assertHolds(first, 2);
      assertThat(first.getVersion().getShardsList())
          .allSatisfy(p -> assertThat(p.getSequence()).isEqualTo(20));

      HttpResponse<String> pinned = admin("POST", http + "/admin/serving/pin?checkpoint=1");
      assertThat(pinned.statusCode()).as(pinned.body()).isEqualTo(200);
      assertThat(pinned.body()).contains("\"pinned\":1").contains("\"source\":\"PINNED\"");
      LookupResponse rolledBack = lookup(stub);
      assertHolds(rolledBack, 1);
      assertThat(rolledBack.getVersion().getNumber()).isGreaterThan(first.getVersion().getNumber());
      ServingStatus status = stub.getServingStatus(ServingStatusRequest.getDefaultInstance());
      assertThat(status.getSource()).isEqualTo(ServingSource.PINNED);
      assertThat(status.getPinned()).isEqualTo(1);

      HttpResponse<String> incomplete = admin("POST", http + "/admin/serving/pin?checkpoint=3");
      assertThat(incomplete.statusCode()).as(incomplete.body()).isEqualTo(404);
      assertThat(incomplete.body()).contains("checkpoint 3");
      assertThat(admin("POST", http + "/admin/serving/pin?checkpoint=0").statusCode())
          .isEqualTo(400);
      assertHolds(lookup(stub), 1);

      HttpResponse<String> resumed = admin("DELETE", http + "/admin/serving/pin");
      assertThat(resumed.statusCode()).as(resumed.body()).isEqualTo(200);
      assertThat(resumed.body()).contains("\"was\":1").contains("\"pinned\":0");
      assertThat(stub.getServingStatus(ServingStatusRequest.getDefaultInstance()).getSource())
          .isEqualTo(ServingSource.FOLLOWING);
      // nothing to follow (no pserver): the pinned values stay served
      assertHolds(lookup(stub), 1);
    } finally {
      if (ch != null) {
        ch.shutdownNow();
      }
      if (serving != null) {
        serving.close();
      }
      TempDirs.deleteRecursively(dir);
    }
  }

  @Test
  void aSavedModelFile_isServedWithoutEtcd() throws Exception {
    Path dir = TempDirs.create("serving-model");
    Path file = dir.resolve("model.psm");
    ModelSpec spec = new ModelSpec("sparse-lr", 3, 2, List.of(), Mlp.Activation.RELU, WIDTH);
    Model model = ModelFactory.create(spec);
    Parameters params = Initializers.initial(model, 7);
    String table = null;
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        table = def.name();
        for (long id : IDS) {
          float[] row = params.sparse(def.name()).row(id);
          for (int j = 0; j < row.length; j++) {
            row[j] = value(5, id, j);
          }
        }
      }
    }
    assertThat(table).isNotNull();
    ModelFiles.write(file, spec, model, params, "saved");
    int grpcPort = FreePorts.next();
    ConfigurableApplicationContext serving = null;
    ManagedChannel ch = null;
    try {
      serving =
          ServingContexts.start(
              grpcPort,
              // nothing listens there: a replica serving a file must not need etcd
              "--paramserver.etcd.endpoints=http://127.0.0.1:" + FreePorts.next(),
              "--paramserver.serving.model=" + file);
      ch = Channels.forAddress("127.0.0.1:" + grpcPort);
      var stub = ServingGrpc.newBlockingStub(ch);
      Poll.until(
          Duration.ofSeconds(30),
          () -> stub.getServingStatus(ServingStatusRequest.getDefaultInstance()).hasVersion(),
          "the replica serves the model file");
      ServingStatus status = stub.getServingStatus(ServingStatusRequest.getDefaultInstance());
      assertThat(status.getSource()).isEqualTo(ServingSource.MODEL_FILE);
      assertThat(status.getOrigin()).isEqualTo(file.toString());

      LookupResponse r =
          stub.withDeadlineAfter(10, TimeUnit.SECONDS)
              .lookup(
                  LookupRequest.newBuilder()
                      .setTable(table)
                      .setWidth(WIDTH)
                      .addAllIds(java.util.Arrays.stream(IDS).boxed().toList())
                      .build());
      assertHolds(r, 5);
      for (ParameterDef def : model.parameters()) {
        if (!def.sparse()) {
          float[] got =
              TensorCodec.decode(
                  stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                      .pull(ServingPullRequest.newBuilder().addNames(def.name()).build())
                      .getTensors(0)
                      .getData());
          assertThat(got).as(def.name()).containsExactly(params.dense(def.name()));
        }
      }
      String http = ServingContexts.http(serving);
      HttpResponse<String> pin = admin("POST", http + "/admin/serving/pin?checkpoint=1");
      assertThat(pin.statusCode()).as(pin.body()).isEqualTo(409);
    } finally {
      if (ch != null) {
        ch.shutdownNow();
      }
      if (serving != null) {
        serving.close();
      }
      TempDirs.deleteRecursively(dir);
    }
  }
}
