package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The exactly-once tests' scripted client data: one parameter {@code w} of {@link #ELEMENTS} floats
 * in blocks of {@link #BLOCK}, SGD with learning rate 1, and pushes of small-integer gradients
 * (exact in float32) identified by (trainer, session, step, part), so the expected parameters are
 * {@code init - sum of the gradients} bit for bit.
 */
final class ScriptedPushes {
  static final int ELEMENTS = 4096;
  static final int BLOCK = 1024;
  static final int BLOCKS = ELEMENTS / BLOCK;
  static final int PARTS = 4;
  static final String TRAINER = "exactly-once-client";
  static final String SESSION = "session-1";
  static final String INIT = "exactly-once-init";

  private ScriptedPushes() {}

  /** The initial values. */
  static float[] initial() {
    float[] v = new float[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) {
      v[i] = (float) (i % 7 - 3);
    }
    return v;
  }

  /** Gradient of (step, part): small integers on two of the blocks, exact in float32. */
  private static float gradient(long step, int part, int i) {
    return (float) ((step * 31 + part * 7 + i) % 5 - 2);
  }

  private static int[] blocksOf(int part) {
    return new int[] {part % BLOCKS, (part + 1) % BLOCKS};
  }

  static PushGradientsRequest push(long step, int part) {
    PushGradientsRequest.Builder r =
        PushGradientsRequest.newBuilder()
            .setTrainerId(TRAINER)
            .setSession(SESSION)
            .setStep(step)
            .setPart(part);
    for (int b : blocksOf(part)) {
      float[] g = new float[BLOCK];
      for (int i = 0; i < BLOCK; i++) {
        g[i] = gradient(step, part, b * BLOCK + i);
      }
      r.addGradients(tensor(b, g));
    }
    return r.build();
  }

  /** Applies (step, part)'s gradient to {@code expected} as SGD with learning rate 1 does. */
  static void subtract(float[] expected, long step, int part) {
    for (int b : blocksOf(part)) {
      for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
        expected[i] -= gradient(step, part, i);
      }
    }
  }

  static InitParametersRequest init(float[] init) {
    InitParametersRequest.Builder req =
        InitParametersRequest.newBuilder()
            .setTrainerId(TRAINER)
            .setInitId(INIT)
            .setMode(TrainingMode.ASYNC)
            .addParameters(
                ParameterSpec.newBuilder()
                    .setName("w")
                    .addShape(ELEMENTS)
                    .setDtype(DataType.FLOAT32)
                    .setBlockSize(BLOCK)
                    .setOptimizer(
                        OptimizerConfig.newBuilder()
                            .setKind(OptimizerConfig.Kind.SGD)
                            .setLearningRate(1f)));
    for (int b = 0; b < BLOCKS; b++) {
      float[] v = new float[BLOCK];
      System.arraycopy(init, b * BLOCK, v, 0, BLOCK);
      req.addBlocks(tensor(b, v));
    }
    return req.build();
  }

  static FinishInitRequest finishInit() {
    return FinishInitRequest.newBuilder()
        .setTrainerId(TRAINER)
        .setInitId(INIT)
        .setExpectedBlocks(BLOCKS)
        .build();
  }

  static TensorBlock tensor(int block, float[] values) {
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

  /** The pulled parameter as floats. */
  static float[] values(PullParametersResponse r) {
    float[] out = new float[ELEMENTS];
    for (TensorBlock b : r.getBlocksList()) {
      ByteBuffer buf = b.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; buf.hasRemaining(); i++) {
        out[(int) b.getOffset() + i] = buf.getFloat();
      }
    }
    return out;
  }

  /** Elements whose bits differ. */
  static int mismatches(float[] actual, float[] expected) {
    int n = 0;
    for (int i = 0; i < ELEMENTS; i++) {
      if (Float.floatToRawIntBits(actual[i]) != Float.floatToRawIntBits(expected[i])) {
        n++;
      }
    }
    return n;
  }

  /** The future's value within {@code seconds}; a timeout is reported as an ExecutionException. */
  static <T> T await(Future<T> f, int seconds) throws ExecutionException, InterruptedException {
    try {
      return f.get(seconds, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new ExecutionException(e);
    }
  }

  /**
   * Sends {@code request} until it is acknowledged (the pserver may be restarting or taking over),
   * for up to 180 s (a restart took up to 90 s on a loaded 2-core CI machine); {@code log} is named
   * in the failure.
   */
  static PushGradientsResponse pushUntilAcknowledged(
      ParameterServerGrpc.ParameterServerFutureStub stub, PushGradientsRequest request, Path log)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (true) {
      try {
        return await(stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(request), 15);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof StatusRuntimeException)
            && !(e.getCause() instanceof TimeoutException)) {
          throw new AssertionError("push failed unexpectedly", e.getCause());
        }
        if (System.nanoTime() > deadline) {
          throw new AssertionError("push was not acknowledged within 180 s; see " + log, e);
        }
        Thread.sleep(20);
      }
    }
  }

  /**
   * Prints {@code report} and writes it to {@code target/<file>}, then asserts that {@code pulled}
   * equals {@code expected} bit for bit.
   */
  static void reportAndCheck(
      String report, String file, float[] pulled, float[] expected, long seed, Path dir)
      throws IOException {
    System.out.println(report);
    Path out = Path.of("target", file);
    Files.createDirectories(out.getParent());
    Files.writeString(out, report + System.lineSeparator());
    assertThat(mismatches(pulled, expected))
        .as("elements differing from init - sum of gradients (seed %d; logs in %s)", seed, dir)
        .isZero();
  }
}
