package dev.paramserver.bench.wire;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.tensor.TensorCodec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The write-ahead log's cost without the network: pushes per second into a {@link ParameterShard}
 * in this JVM, one thread, with the log off and with each sync setting, 4 KiB and 1 MiB gradients
 * (SGD). Settings are interleaved over rounds and the best round kept, so machine load hits each
 * alike. Prints one {@code wal_injvm <setting> <size> <pushes/s>} line per cell.
 */
public final class WalInJvmBench {
  static final String[] SETTINGS = {"off", "none", "batch", "always"};
  static final int[] SIZES = {4 << 10, 1 << 20};

  private WalInJvmBench() {}

  public static void main(String[] args) throws Exception {
    run(3, 1000);
  }

  /** Pushes per second, best of {@code rounds}, by setting then size index. */
  public static Map<String, double[]> run(int rounds, long measureMs) throws Exception {
    Map<String, double[]> best = new LinkedHashMap<>();
    for (String s : SETTINGS) {
      best.put(s, new double[SIZES.length]);
    }
    Path dir = Files.createTempDirectory("paramserver-wal-bench-");
    try {
      for (int round = 0; round < rounds; round++) {
        for (String setting : SETTINGS) {
          for (int i = 0; i < SIZES.length; i++) {
            double v =
                measure(dir.resolve(setting + "-" + round + "-" + i), setting, SIZES[i], measureMs);
            best.get(setting)[i] = Math.max(best.get(setting)[i], v);
            System.out.printf(
                "wal_injvm %-6s %7d B: %10.0f pushes/s (round %d)%n",
                setting, SIZES[i], v, round + 1);
          }
        }
      }
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    return best;
  }

  private static double measure(Path dir, String setting, int bytes, long measureMs) {
    int n = bytes / 4;
    ParameterShard shard = new ParameterShard(false);
    shard.indexFrom(() -> 0);
    WriteAheadLog log = null;
    if (!setting.equals("off")) {
      log =
          new WriteAheadLog(
              dir,
              WriteAheadLog.SyncMode.valueOf(setting.toUpperCase(java.util.Locale.ROOT)),
              Duration.ofMillis(50));
      log.open(0, 0, r -> true);
      shard.attachLog(log);
    }
    shard.init(
        InitParametersRequest.newBuilder()
            .setTrainerId("bench")
            .setInitId("bench")
            .addParameters(
                ParameterSpec.newBuilder()
                    .setName("w")
                    .addShape(n)
                    .setDtype(DataType.FLOAT32)
                    .setBlockSize(n)
                    .setOptimizer(
                        OptimizerConfig.newBuilder()
                            .setKind(OptimizerConfig.Kind.SGD)
                            .setLearningRate(1e-6f)))
            .addBlocks(block(new float[n]))
            .build());
    shard.finishInit(
        FinishInitRequest.newBuilder()
            .setTrainerId("bench")
            .setInitId("bench")
            .setExpectedBlocks(1)
            .build());
    float[] g = new float[n];
    java.util.Arrays.fill(g, 1e-3f);
    TensorBlock grad = block(g);
    long step = 0;
    // warm-up, then the measured window
    for (long end = System.nanoTime() + measureMs * 300_000L; System.nanoTime() < end; ) {
      shard.push(push(grad, ++step));
    }
    long pushes = 0;
    long start = System.nanoTime();
    long end = start + measureMs * 1_000_000L;
    while (System.nanoTime() < end) {
      shard.push(push(grad, ++step));
      pushes++;
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    if (log != null) {
      log.close();
    }
    return pushes / seconds;
  }

  private static TensorBlock block(float[] values) {
    ByteString data = TensorCodec.encode(values);
    return TensorBlock.newBuilder()
        .setName("w")
        .setBlock(0)
        .setDtype(DataType.FLOAT32)
        .setData(data)
        .build();
  }

  private static PushGradientsRequest push(TensorBlock grad, long step) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId("bench")
        .setSession("s")
        .setStep(step)
        .addGradients(grad)
        .build();
  }
}
