package dev.paramserver.bench.cluster;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/** Initialises a single pserver directly over gRPC, as the one initialising trainer would. */
public final class PserverSetup {
  /** The trainer's default block size: 262144 floats (1 MiB). */
  public static final int BLOCK = 262144;

  /** One dense parameter to define. */
  public record Param(String name, int elements, OptimizerConfig optimizer) {}

  private PserverSetup() {}

  /** Waits until the pserver answers GetShardStatus (its gRPC port opens after its HTTP port). */
  public static ShardStatus awaitServing(String address, Duration timeout) {
    ManagedChannel ch = Channels.forAddress(address);
    try {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        try {
          return ParameterServerGrpc.newBlockingStub(ch)
              .withDeadlineAfter(2, TimeUnit.SECONDS)
              .getShardStatus(GetShardStatusRequest.getDefaultInstance());
        } catch (StatusRuntimeException e) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(
                "pserver at " + address + " does not answer GetShardStatus: " + e.getStatus(), e);
          }
          try {
            Thread.sleep(100);
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ie);
          }
        }
      }
    } finally {
      Channels.close(ch);
    }
  }

  /** Defines the parameters with small random values, in requests of about 8 MiB, then finishes. */
  /**
   * Polls the pservers' status until one of them has {@code role} (replicas): its address, or empty
   * after {@code timeout} (for example when replication is off).
   */
  public static Optional<String> awaitRole(
      List<String> addresses, ReplicaRole role, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    do {
      for (String a : addresses) {
        ManagedChannel ch = Channels.forAddress(a);
        try {
          ShardStatus s =
              ParameterServerGrpc.newBlockingStub(ch)
                  .withDeadlineAfter(2, TimeUnit.SECONDS)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance());
          if (s.getReplicaRole() == role) {
            return Optional.of(a);
          }
        } catch (StatusRuntimeException e) {
          // not up yet
        } finally {
          Channels.close(ch);
        }
      }
      if (addresses.size() < 2 && role == ReplicaRole.REPLICA_PRIMARY) {
        return Optional.empty();
      }
      Thread.sleep(100);
    } while (System.nanoTime() < deadline);
    return Optional.empty();
  }

  public static int initialise(String address, List<Param> params) {
    ManagedChannel ch = Channels.forAddress(address);
    try {
      var stub = ParameterServerGrpc.newBlockingStub(ch);
      String initId = "bench-" + System.nanoTime();
      int blocks = 0;
      for (Param p : params) {
        ParameterSpec spec =
            ParameterSpec.newBuilder()
                .setName(p.name())
                .addShape(p.elements())
                .setDtype(DataType.FLOAT32)
                .setBlockSize(BLOCK)
                .setOptimizer(p.optimizer())
                .build();
        int count = (p.elements() + BLOCK - 1) / BLOCK;
        List<TensorBlock> batch = new ArrayList<>();
        long batchBytes = 0;
        Random rnd = new Random(p.name().hashCode());
        for (int b = 0; b < count; b++) {
          int n = Math.min(BLOCK, p.elements() - b * BLOCK);
          float[] v = new float[n];
          for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * 0.01);
          }
          batch.add(
              TensorBlock.newBuilder()
                  .setName(p.name())
                  .setBlock(b)
                  .setOffset((long) b * BLOCK)
                  .setDtype(DataType.FLOAT32)
                  .setData(TensorCodec.encode(v))
                  .build());
          batchBytes += 4L * n;
          if (batchBytes >= 8 << 20 || b == count - 1) {
            InitParametersRequest req =
                InitParametersRequest.newBuilder()
                    .setTrainerId("bench")
                    .setInitId(initId)
                    .addParameters(spec)
                    .addAllBlocks(batch)
                    .build();
            // GetShardStatus answers while the pserver still claims its index: it refuses
            // InitParameters (UNAVAILABLE) until then, so the first request is retried
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
              try {
                stub.withDeadlineAfter(60, TimeUnit.SECONDS).initParameters(req);
                break;
              } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() != Status.Code.UNAVAILABLE
                    || System.nanoTime() > deadline) {
                  throw e;
                }
                try {
                  Thread.sleep(100);
                } catch (InterruptedException ie) {
                  Thread.currentThread().interrupt();
                  throw new IllegalStateException("interrupted", ie);
                }
              }
            }
            batch.clear();
            batchBytes = 0;
          }
        }
        blocks += count;
      }
      stub.withDeadlineAfter(60, TimeUnit.SECONDS)
          .finishInit(
              FinishInitRequest.newBuilder()
                  .setTrainerId("bench")
                  .setInitId(initId)
                  .setExpectedBlocks(blocks)
                  .build());
      return blocks;
    } finally {
      Channels.close(ch);
    }
  }
}
