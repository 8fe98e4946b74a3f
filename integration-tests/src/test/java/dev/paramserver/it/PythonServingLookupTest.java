package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PredictRequest;
import dev.paramserver.proto.v1.PredictResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ShardPosition;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python client's {@code paramserver.lookup} and {@code paramserver.predict} against a real
 * serving replica following a 1 + 1 sparse-lr job whose trainer coordinates through the master
 * ({@code clients/python/tests/e2e/serving_lookup.py}): the master records the model description
 * the trainer joined with; a push acknowledged by the pserver is seen with its min_version, the
 * rows equal the Java gRPC Lookup's and the probabilities the Java gRPC Predict's bit for bit on
 * the same version, an id never pushed is flagged defaulted, an unknown table raises {@code
 * UnknownParameter} and an example with a dense feature too many {@code BadArgument}. Debian's
 * Python.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class PythonServingLookupTest {
  private static final String TABLE = "wide";
  private static final long PUSHED = 7_000_000_001L;
  private static final long NEVER = 7_000_000_002L;
  private static final String PREDICT = PUSHED + "," + NEVER + ";" + PUSHED + ";1,2,3";

  @TempDir Path dir;

  @Test
  void lookupFromPython_seesAnAcknowledgedPush_withTheJavaClientsBits() throws Exception {
    PythonProcesses.assumeUsable(dir, false);
    ClusterSpec.Builder spec =
        ClickJobs.sparseLr(dir, 4000, 200)
            .jar(Role.SERVING, Jobs.jar(Role.SERVING))
            .job("py-serving")
            .masters(1)
            .pservers(1)
            .trainers(1)
            // no etcd client in the trainer: the master records its model description (Predict)
            .trainersThroughMaster(true)
            .serving(1)
            // trains until the test stops it
            .property(Role.MASTER, "paramserver.master.passes", "200")
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .property(Role.TRAINER, "paramserver.trainer.optimizer", "adagrad");
    Path log = dir.resolve("serving-lookup.log");
    Process p = null;
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      cluster.awaitReady(Role.SERVING, 0, Duration.ofMinutes(3));
      String serving = "127.0.0.1:" + cluster.process(Role.SERVING, 0).grpcPort();
      ManagedChannel ps =
          Channels.forAddress("127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort());
      ManagedChannel sv = Channels.forAddress(serving);
      try {
        ServingGrpc.ServingBlockingStub stub = ServingGrpc.newBlockingStub(sv);
        Poll.until(
            Duration.ofMinutes(3),
            Duration.ofMillis(200),
            () -> tableServed(stub),
            "table '" + TABLE + "' initialised by the trainer and served");
        ModelFile description = recordedDescription(cluster);
        assertThat(description.getModel())
            .as("model/description: %s", description)
            .isEqualTo("sparse-lr");
        assertThat(description.getJob()).as("model/description's job").isEqualTo("py-serving");
        int dense = Integer.parseInt(description.getConfigOrDefault("features", "0"));
        // the model holds still from here: only this test's push changes it, so Python and Java
        // read the same version
        cluster.stop(Role.TRAINER, 0);
        long acked =
            ParameterServerGrpc.newBlockingStub(ps)
                .withDeadlineAfter(20, TimeUnit.SECONDS)
                .pushGradients(
                    PushGradientsRequest.newBuilder()
                        .setTrainerId("py-serving-test")
                        .setSession("py-serving-test-session")
                        .setStep(1)
                        .addSparseGradients(
                            SparseRows.newBuilder()
                                .setName(TABLE)
                                .setDtype(DataType.FLOAT32)
                                .setData(TensorCodec.encode(new float[] {1f}))
                                .addRowIds(PUSHED))
                        .build())
                .getStep();

        p =
            PythonProcesses.start(
                log,
                PythonProcesses.E2E.resolve("serving_lookup.py").toString(),
                "--serving",
                serving,
                "--table",
                TABLE,
                "--ids",
                PUSHED + "," + NEVER,
                "--width",
                "1",
                "--shard",
                "0",
                "--sequence",
                Long.toString(acked),
                "--predict",
                PREDICT,
                "--dense",
                Integer.toString(dense));
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("serving_lookup.py ends").isTrue();
        String out = PythonProcesses.read(log);
        assertThat(p.exitValue()).as("its exit code; output:\n%s", out).isZero();
        assertThat(Long.parseLong(PythonProcesses.pyresult(log, "sequence")))
            .as("sequence read for a push acknowledged at %d", acked)
            .isGreaterThanOrEqualTo(acked);
        assertThat(PythonProcesses.pyresult(log, "defaulted")).as(out).isEqualTo("1");
        assertThat(PythonProcesses.pyresult(log, "unknown")).as(out).isEqualTo("UnknownParameter");

        // only this test pushes these ids: their rows hold still, the Java client reads the same
        LookupResponse java =
            stub.withDeadlineAfter(20, TimeUnit.SECONDS)
                .lookup(
                    LookupRequest.newBuilder()
                        .setTable(TABLE)
                        .setWidth(1)
                        .addIds(PUSHED)
                        .addIds(NEVER)
                        .setMinVersion(
                            MinVersion.newBuilder()
                                .setWaitMs(15_000)
                                .addShards(
                                    ShardPosition.newBuilder().setIndex(0).setSequence(acked)))
                        .build());
        assertThat(PythonProcesses.pyresult(log, "values"))
            .as("float32 bits of the rows, Python vs Java")
            .isEqualTo(hex(java.getValues()));
        assertThat(TensorCodec.decode(java.getValues())[0]).as("the pushed row").isNotZero();

        long predictedAt = Long.parseLong(PythonProcesses.pyresult(log, "predict_sequence"));
        PredictResponse javaPredict =
            stub.withDeadlineAfter(20, TimeUnit.SECONDS)
                .predict(
                    PredictRequest.newBuilder()
                        .addAllExamples(examples(dense))
                        .setMinVersion(
                            MinVersion.newBuilder()
                                .setWaitMs(15_000)
                                .addShards(
                                    ShardPosition.newBuilder()
                                        .setIndex(0)
                                        .setSequence(predictedAt)))
                        .build());
        assertThat(javaPredict.getVersion().getShards(0).getSequence())
            .as("the version Java predicted on is Python's")
            .isEqualTo(predictedAt);
        assertThat(PythonProcesses.pyresult(log, "classes")).isEqualTo("2");
        assertThat(PythonProcesses.pyresult(log, "probabilities"))
            .as("float32 bits of the probabilities, Python vs Java")
            .isEqualTo(hex(javaPredict.getProbabilitiesList()));
        assertThat(PythonProcesses.pyresult(log, "predicted"))
            .isEqualTo(
                String.join(
                    ",", javaPredict.getPredictedList().stream().map(String::valueOf).toList()));
        assertThat(PythonProcesses.pyresult(log, "bad")).as(out).isEqualTo("BadArgument");
        assertThat(out)
            .as("the refusal names the example and the model's dense features")
            .contains("example 0 of the batch has " + (dense + 1) + " dense features");
      } finally {
        sv.shutdownNow();
        ps.shutdownNow();
      }
    } finally {
      PythonProcesses.kill(p);
    }
  }

  /** The job's {@code model/description} in etcd. */
  private static ModelFile recordedDescription(LocalCluster cluster) throws Exception {
    try (EtcdCoordinator etcd =
        EtcdCoordinator.connect(EtcdSettings.of(cluster.etcdEndpoint(), "py-serving"))) {
      KeyValueStore.KeyValue kv =
          etcd.kv()
              .get(etcd.keys().modelDescription())
              .orElseThrow(() -> new AssertionError("no model/description in etcd"));
      return ModelFile.parseFrom(kv.value());
    }
  }

  /** The examples of {@link #PREDICT}, as serving_lookup.py makes them. */
  private static List<Example> examples(int dense) {
    List<Example> out = new ArrayList<>();
    for (String ids : PREDICT.split(";")) {
      Example.Builder e = Example.newBuilder();
      for (int i = 0; i < dense; i++) {
        e.addDense(0.5f);
      }
      for (String id : ids.split(",")) {
        e.addSparseIds(Long.parseLong(id));
      }
      out.add(e.build());
    }
    return out;
  }

  private static String hex(List<Float> values) {
    ByteBuffer b = ByteBuffer.allocate(4 * values.size()).order(ByteOrder.LITTLE_ENDIAN);
    values.forEach(b::putFloat);
    return HexFormat.of().formatHex(b.array());
  }

  private static boolean tableServed(ServingGrpc.ServingBlockingStub stub) {
    try {
      stub.withDeadlineAfter(10, TimeUnit.SECONDS)
          .lookup(LookupRequest.newBuilder().setTable(TABLE).addIds(1).build());
      return true;
    } catch (StatusRuntimeException e) {
      return false; // no table before the trainer initialised it; nothing served before a copy
    }
  }

  private static String hex(ByteString bytes) {
    return HexFormat.of().formatHex(bytes.toByteArray());
  }
}
