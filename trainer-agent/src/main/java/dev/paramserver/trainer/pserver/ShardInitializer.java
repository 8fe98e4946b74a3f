package dev.paramserver.trainer.pserver;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.Lease;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.Backoff;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.trainer.TrainerStoppedException;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes sure every pserver holds its blocks. One trainer at a time initialises: the one that
 * creates {@code init_ps/lock} under its lease; if it dies midway the lock vanishes with its lease
 * and another trainer takes over. Uninitialised pservers (a fresh job, or a pserver restarted
 * without a checkpoint) get the values the initialising trainer has: the deterministic initial
 * values at the start, its latest pulled values later.
 */
public final class ShardInitializer {
  private static final Logger log = LoggerFactory.getLogger(ShardInitializer.class);

  private final Coordinator coordinator;
  private final PserverDirectory directory;
  private final Lease lease;
  private final String trainerId;
  private final Duration rpcTimeout;
  private final Duration maxBackoff;
  private final BooleanSupplier stopping;
  private final TrainingMode mode;
  private ModelLayout layout;

  public ShardInitializer(
      Coordinator coordinator,
      PserverDirectory directory,
      Lease lease,
      String trainerId,
      Duration rpcTimeout,
      Duration maxBackoff,
      TrainingMode mode,
      BooleanSupplier stopping) {
    this.coordinator = coordinator;
    this.directory = directory;
    this.lease = lease;
    this.trainerId = trainerId;
    this.rpcTimeout = rpcTimeout;
    this.maxBackoff = maxBackoff;
    this.mode = mode;
    this.stopping = stopping;
  }

  public void setLayout(ModelLayout layout) {
    this.layout = layout;
  }

  /** Blocks until every pserver is initialised, initialising them if this trainer wins the lock. */
  public void ensureAll(Parameters values) {
    ensure(allPservers(), values);
  }

  /** Re-initialises one pserver that lost its state (if no other trainer did it meanwhile). */
  public void reinitialise(int ps, Parameters values) {
    ensure(List.of(ps), values);
  }

  private List<Integer> allPservers() {
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < layout.pservers(); i++) {
      all.add(i);
    }
    return all;
  }

  private void ensure(List<Integer> pservers, Parameters values) {
    Backoff backoff = new Backoff(Duration.ofMillis(200), Duration.ofSeconds(2));
    long lastLog = 0;
    while (true) {
      if (stopping.getAsBoolean()) {
        throw new TrainerStoppedException("initialising pservers");
      }
      List<Integer> missing = uninitialised(pservers);
      if (missing.isEmpty()) {
        return;
      }
      String lockKey = coordinator.keys().initLock();
      boolean won = false;
      try {
        won =
            coordinator
                .kv()
                .putIfAbsent(lockKey, trainerId.getBytes(StandardCharsets.UTF_8), lease);
      } catch (RuntimeException e) {
        log.warn("cannot take the initialisation lock: {}", e.getMessage());
      }
      if (won) {
        try {
          initialise(uninitialised(pservers), values);
        } finally {
          try {
            coordinator.kv().delete(lockKey);
          } catch (RuntimeException e) {
            log.warn(
                "cannot release the initialisation lock (it ends with our lease): {}",
                e.getMessage());
          }
        }
        continue;
      }
      if (System.currentTimeMillis() - lastLog > 5000) {
        log.info("waiting for another trainer to initialise pservers {}", missing);
        lastLog = System.currentTimeMillis();
      }
      try {
        backoff.pause();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TrainerStoppedException("initialising pservers");
      }
    }
  }

  /** The pservers among {@code pservers} that answer and are not initialised. */
  private List<Integer> uninitialised(List<Integer> pservers) {
    List<Integer> out = new ArrayList<>();
    for (int ps : pservers) {
      ShardStatus st = status(ps);
      if (!st.getInitialised()) {
        out.add(ps);
      }
    }
    return out;
  }

  private ShardStatus status(int ps) {
    Backoff backoff = Backoff.upTo(maxBackoff);
    while (true) {
      if (stopping.getAsBoolean()) {
        throw new TrainerStoppedException("asking pserver " + ps + " for its status");
      }
      var stub = directory.stub(ps);
      if (stub != null) {
        try {
          return stub.withDeadlineAfter(rpcTimeout.toMillis(), TimeUnit.MILLISECONDS)
              .getShardStatus(GetShardStatusRequest.getDefaultInstance())
              .get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new TrainerStoppedException("asking pserver " + ps + " for its status");
        } catch (ExecutionException e) {
          if (!RpcErrors.isTransient(e.getCause())) {
            throw new IllegalStateException(
                "pserver " + ps + " failed to report its status", e.getCause());
          }
          log.warn("pserver {} is unreachable ({}); retrying", ps, RpcErrors.codeOf(e.getCause()));
          directory.invalidate(ps);
        }
      } else {
        directory.invalidate(ps);
      }
      try {
        backoff.pause();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TrainerStoppedException("asking pserver " + ps + " for its status");
      }
    }
  }

  private void initialise(List<Integer> pservers, Parameters values) {
    if (pservers.isEmpty()) {
      return;
    }
    String doneKey = coordinator.keys().initDone();
    String initId =
        coordinator
            .kv()
            .get(doneKey)
            .map(kv -> kv.valueAsString())
            .orElse(UUID.randomUUID().toString());
    for (int ps : pservers) {
      List<BlockSpec> blocks = layout.blocksOf(ps);
      log.info(
          "initialising pserver {} ({}) with {} blocks, {} bytes, init {}",
          ps,
          directory.address(ps),
          blocks.size(),
          layout.placement().bytesOf(ps),
          initId);
      try {
        var stub = directory.stub(ps);
        if (stub == null) {
          throw new IllegalStateException("pserver " + ps + " is not registered");
        }
        List<InitParametersRequest> requests = initRequests(blocks, values, initId);
        for (InitParametersRequest req : requests) {
          stub.withDeadlineAfter(rpcTimeout.toMillis(), TimeUnit.MILLISECONDS)
              .initParameters(req)
              .get();
        }
        stub.withDeadlineAfter(rpcTimeout.toMillis(), TimeUnit.MILLISECONDS)
            .finishInit(
                FinishInitRequest.newBuilder()
                    .setTrainerId(trainerId)
                    .setInitId(initId)
                    .setExpectedBlocks(blocks.size())
                    .build())
            .get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TrainerStoppedException("initialising pserver " + ps);
      } catch (ExecutionException | RuntimeException e) {
        Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
        if (cause instanceof StatusRuntimeException && RpcErrors.isTransient(cause)) {
          log.warn("initialising pserver {} failed ({}); will retry", ps, RpcErrors.codeOf(cause));
          directory.invalidate(ps);
          return;
        }
        throw new IllegalStateException(
            "initialising pserver " + ps + " failed: " + cause.getMessage(), cause);
      }
    }
    coordinator.kv().put(doneKey, initId.getBytes(StandardCharsets.UTF_8));
  }

  private List<InitParametersRequest> initRequests(
      List<BlockSpec> blocks, Parameters values, String initId) {
    List<InitParametersRequest> out = new ArrayList<>();
    InitParametersRequest.Builder cur = newRequest(initId);
    long bytes = 0;
    for (BlockSpec b : blocks) {
      if (bytes > 0 && bytes + b.bytes() > ParameterClient.MAX_REQUEST_BYTES) {
        out.add(cur.build());
        cur = newRequest(initId);
        bytes = 0;
      }
      cur.addBlocks(
          TensorBlock.newBuilder()
              .setName(b.name())
              .setBlock(b.block())
              .setOffset(b.offset())
              .setDtype(DataType.FLOAT32)
              .setData(TensorCodec.encode(values.dense(b.name()), (int) b.offset(), b.length())));
      bytes += b.bytes();
    }
    out.add(cur.build());
    return out;
  }

  private InitParametersRequest.Builder newRequest(String initId) {
    return InitParametersRequest.newBuilder()
        .setTrainerId(trainerId)
        .addAllParameters(layout.specs())
        .setInitId(initId)
        .setMode(mode);
  }
}
