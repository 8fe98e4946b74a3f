package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bounded memory (paramserver.pserver.limits.*): a real pserver process with a 256 MiB heap and its
 * default limits takes a flood of 60 MiB pushes from 8 concurrent clients without running out of
 * memory: the pushes past its limits are refused OVERLOADED (counted by reason), and a normal job
 * afterwards trains as before.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class OverloadFloodTest {
  private static final int BLOCK = 1 << 20; // floats: 4 MiB a block
  private static final int BLOCKS = 16;
  private static final int FLOOD_BLOCKS = 15; // blocks 1..15: 60 MiB, under the 64 MB message cap
  private static final int CLIENTS = 8;
  private static final int PUSHES_PER_CLIENT = 3;
  private static final String HEAP = "256m";
  private static final long HEAP_BYTES = 256L << 20;

  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  @Test
  void floodOf60MiBPushesFrom8Clients_isRefusedOverloaded_heapHolds_andANormalJobStillTrains()
      throws Exception {
    Map<String, String> p = new HashMap<>();
    p.put("paramserver.job", etcd.uniqueJob());
    p.put("paramserver.etcd.endpoints", etcd.endpoint());
    p.put("paramserver.pserver.desired", "1");
    p.put("paramserver.pserver.index", "0");
    p.put("paramserver.pserver.checkpoint-dir", dir.resolve("checkpoints").toString());
    p.put("paramserver.pserver.checkpoint-interval", "1h");
    p.put("paramserver.pserver.wal.enabled", "false");
    List<String> heap = List.of("-Xms" + HEAP, "-Xmn64m", "-Xmx" + HEAP);
    try (ServiceRun ps = ServiceRun.start(Role.PSERVER, dir.resolve("logs/ps.log"), p, heap)) {
      ps.awaitGrpcListening(Duration.ofSeconds(90));
      ManagedChannel init = Channels.forAddress("127.0.0.1:" + ps.grpcPort);
      try {
        ParameterServerGrpc.ParameterServerBlockingStub stub =
            ParameterServerGrpc.newBlockingStub(init);
        Poll.until(
            Duration.ofSeconds(60),
            () -> initialise(stub),
            "the pserver takes InitParameters; see " + ps.log);

        HeapSampler sampler = new HeapSampler(ps.httpPort);
        Map<String, Integer> outcomes = flood(ps.grpcPort);
        sampler.stop();

        System.out.printf(
            "flood of %d x %d pushes of %d MiB against -Xmx%s: %s; heap used at most %d MiB"
                + " of %d MiB (%d samples)%n",
            CLIENTS,
            PUSHES_PER_CLIENT,
            FLOOD_BLOCKS * BLOCK * 4 >> 20,
            HEAP,
            outcomes,
            sampler.maxUsed.get() >> 20,
            HEAP_BYTES >> 20,
            sampler.samples.get());
        assertThat(ps.process.isAlive()).as("pserver alive; see %s", ps.log).isTrue();
        assertThat(ps.output()).doesNotContain("OutOfMemoryError");
        assertThat(outcomes).containsKey("OK");
        assertThat(outcomes.getOrDefault("OVERLOADED", 0))
            .as("pushes refused OVERLOADED: %s", outcomes)
            .isPositive();
        assertThat(outcomes.keySet())
            .as("every push acknowledged or refused OVERLOADED")
            .containsOnly("OK", "OVERLOADED");
        assertThat(sampler.samples.get()).isPositive();
        assertThat(sampler.maxUsed.get()).isLessThan(HEAP_BYTES);
        String metrics = Jobs.scrapePrometheus(ps.httpPort);
        double refused =
            sum(metrics, "paramserver_pserver_refused_total\\{[^}]*reason=\"(calls|bytes)\"");
        assertThat(refused).as("refusals counted: %s", outcomes).isPositive();

        // a normal job afterwards: 10 small pushes on block 0, each acknowledged
        for (int step = 1; step <= 10; step++) {
          PushGradientsRequest push =
              PushGradientsRequest.newBuilder()
                  .setTrainerId("normal")
                  .setSession("s")
                  .setStep(step)
                  .addGradients(block(0, constant(BLOCK, 1f)))
                  .build();
          stub.withDeadlineAfter(30, TimeUnit.SECONDS).pushGradients(push);
        }
        TensorBlock pulled =
            stub.withDeadlineAfter(30, TimeUnit.SECONDS)
                .pullParameters(
                    PullParametersRequest.newBuilder()
                        .addBlocks(BlockRef.newBuilder().setName("w").setBlock(0))
                        .build())
                .getBlocks(0);
        ByteBuffer values = pulled.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        assertThat(values.getFloat(0)).isEqualTo(-10f);
        assertThat(values.getFloat(4 * (BLOCK - 1))).isEqualTo(-10f);
      } finally {
        init.shutdownNow();
        init.awaitTermination(10, TimeUnit.SECONDS);
      }
    }
  }

  private static boolean initialise(ParameterServerGrpc.ParameterServerBlockingStub stub) {
    try {
      ByteString zeros = ByteString.copyFrom(new byte[4 * BLOCK]);
      // a block a request: the whole parameter (64 MiB) is over the message cap
      for (int b = 0; b < BLOCKS; b++) {
        stub.withDeadlineAfter(30, TimeUnit.SECONDS)
            .initParameters(
                InitParametersRequest.newBuilder()
                    .setTrainerId("flood")
                    .setInitId("flood-init")
                    .setMode(TrainingMode.ASYNC)
                    .addParameters(
                        ParameterSpec.newBuilder()
                            .setName("w")
                            .addShape((long) BLOCK * BLOCKS)
                            .setDtype(DataType.FLOAT32)
                            .setBlockSize(BLOCK)
                            .setOptimizer(
                                OptimizerConfig.newBuilder()
                                    .setKind(OptimizerConfig.Kind.SGD)
                                    .setLearningRate(1f)))
                    .addBlocks(blockOf(b, zeros))
                    .build());
      }
      stub.withDeadlineAfter(30, TimeUnit.SECONDS)
          .finishInit(
              FinishInitRequest.newBuilder()
                  .setTrainerId("flood")
                  .setInitId("flood-init")
                  .setExpectedBlocks(BLOCKS)
                  .build());
      return true;
    } catch (StatusRuntimeException e) {
      return false;
    }
  }

  /** 8 clients, each on its own connection, each sending its pushes one after the other. */
  private static Map<String, Integer> flood(int grpcPort) throws Exception {
    ByteString gradient = ByteString.copyFrom(new byte[4 * BLOCK]); // zeros: values unchanged
    Map<String, Integer> outcomes = new ConcurrentHashMap<>();
    ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
    List<Future<?>> done = new ArrayList<>();
    try {
      for (int c = 0; c < CLIENTS; c++) {
        String trainer = "flood-" + c;
        done.add(
            clients.submit(
                () -> {
                  ManagedChannel ch = Channels.forAddress("127.0.0.1:" + grpcPort);
                  try {
                    ParameterServerGrpc.ParameterServerBlockingStub s =
                        ParameterServerGrpc.newBlockingStub(ch);
                    for (int step = 1; step <= PUSHES_PER_CLIENT; step++) {
                      PushGradientsRequest.Builder push =
                          PushGradientsRequest.newBuilder()
                              .setTrainerId(trainer)
                              .setSession("s")
                              .setStep(step);
                      for (int b = 1; b <= FLOOD_BLOCKS; b++) {
                        push.addGradients(blockOf(b, gradient));
                      }
                      outcomes.merge(outcome(s, push.build()), 1, Integer::sum);
                    }
                  } finally {
                    ch.shutdownNow();
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(3, TimeUnit.MINUTES);
      }
    } finally {
      clients.shutdownNow();
    }
    return outcomes;
  }

  private static String outcome(
      ParameterServerGrpc.ParameterServerBlockingStub s, PushGradientsRequest push) {
    try {
      s.withDeadlineAfter(90, TimeUnit.SECONDS).pushGradients(push);
      return "OK";
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED
          && RpcErrors.reasonOf(e) == ErrorReason.OVERLOADED
          && RpcErrors.retryAfterOf(e).isPresent()) {
        return "OVERLOADED";
      }
      return e.getStatus().getCode() + " " + RpcErrors.reasonOf(e) + ": " + e.getMessage();
    }
  }

  private static TensorBlock block(int b, float[] values) {
    ByteBuffer buf = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
    buf.asFloatBuffer().put(values);
    return blockOf(b, ByteString.copyFrom(buf));
  }

  private static TensorBlock blockOf(int b, ByteString data) {
    return TensorBlock.newBuilder()
        .setName("w")
        .setBlock(b)
        .setOffset((long) b * BLOCK)
        .setDtype(DataType.FLOAT32)
        .setData(data)
        .build();
  }

  private static float[] constant(int n, float v) {
    float[] out = new float[n];
    java.util.Arrays.fill(out, v);
    return out;
  }

  private static double sum(String prometheus, String seriesRegex) {
    Matcher m =
        Pattern.compile("^" + seriesRegex + "[^}]*} ([0-9.eE+-]+)$", Pattern.MULTILINE)
            .matcher(prometheus);
    double total = 0;
    while (m.find()) {
      total += Double.parseDouble(m.group(m.groupCount()));
    }
    return total;
  }

  /** Samples the pserver's heap (its own JVM metrics) every 200 ms while the flood runs. */
  private static final class HeapSampler {
    final AtomicLong maxUsed = new AtomicLong();
    final AtomicLong samples = new AtomicLong();
    private final ExecutorService thread = Executors.newSingleThreadExecutor();

    HeapSampler(int httpPort) {
      thread.submit(
          () -> {
            while (!Thread.currentThread().isInterrupted()) {
              try {
                String text = Jobs.scrapePrometheus(httpPort);
                maxUsed.accumulateAndGet(
                    (long) sum(text, "jvm_memory_used_bytes\\{[^}]*area=\"heap\""), Math::max);
                samples.incrementAndGet();
                Thread.sleep(200);
              } catch (InterruptedException e) {
                return null;
              } catch (Exception | AssertionError e) {
                // a scrape refused or late under the flood: the next one counts
              }
            }
            return null;
          });
    }

    void stop() throws InterruptedException {
      thread.shutdownNow();
      thread.awaitTermination(10, TimeUnit.SECONDS);
    }
  }
}
