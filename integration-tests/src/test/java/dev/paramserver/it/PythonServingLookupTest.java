package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ShardPosition;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python client's {@code paramserver.lookup} against a real serving replica following a 1 + 1
 * sparse-lr job ({@code clients/python/tests/e2e/serving_lookup.py}): a push acknowledged by the
 * pserver is seen with its min_version, the rows equal the Java gRPC Lookup's bit for bit, an id
 * never pushed is flagged defaulted, and an unknown table raises {@code UnknownParameter}. Debian's
 * Python.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class PythonServingLookupTest {
  private static final String TABLE = "wide";
  private static final long PUSHED = 7_000_000_001L;
  private static final long NEVER = 7_000_000_002L;

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
            .serving(1)
            // trains through the whole test; the cluster is closed at the end
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
                Long.toString(acked));
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
      } finally {
        sv.shutdownNow();
        ps.shutdownNow();
      }
    } finally {
      PythonProcesses.kill(p);
    }
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
