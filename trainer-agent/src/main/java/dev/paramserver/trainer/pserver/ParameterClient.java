package dev.paramserver.trainer.pserver;

import com.google.common.util.concurrent.ListenableFuture;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.Backoff;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.trainer.TrainerStoppedException;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pushes gradients to and pulls parameters from every pserver at once, block by block as the layout
 * places them. Requests are cut so none carries more than {@link #MAX_REQUEST_BYTES} of tensor
 * data.
 *
 * <p>Retry policy (this is the one layer that retries pserver calls): a pull is safe to repeat and
 * is retried with backoff until it succeeds; a push is not (a repeated push would apply the same
 * gradient twice), so a failed push is not repeated: its gradient is dropped and counted, and the
 * pserver's address is looked up again. A pserver that lost its state (NOT_INITIALIZED) is
 * re-initialised by {@link ShardInitializer} with this trainer's latest values.
 */
public final class ParameterClient {
  private static final Logger log = LoggerFactory.getLogger(ParameterClient.class);

  /** Largest tensor payload of one request, well under gRPC's 4 MiB default cap. */
  public static final int MAX_REQUEST_BYTES = 2 * 1024 * 1024;

  private final PserverDirectory directory;
  private final ModelLayout layout;
  private final ShardInitializer initializer;
  private final String trainerId;
  private final Duration rpcTimeout;
  private final Duration maxBackoff;
  private final BooleanSupplier stopping;
  private final DataType gradientType;
  private final boolean sync;
  private final AtomicLong bytesPushed = new AtomicLong();
  private final AtomicLong bytesPulled = new AtomicLong();
  private final AtomicLong droppedPushes = new AtomicLong();

  public ParameterClient(
      PserverDirectory directory,
      ModelLayout layout,
      ShardInitializer initializer,
      String trainerId,
      Duration rpcTimeout,
      Duration maxBackoff,
      DataType gradientType,
      boolean sync,
      BooleanSupplier stopping) {
    this.gradientType = gradientType;
    this.sync = sync;
    this.directory = directory;
    this.layout = layout;
    this.initializer = initializer;
    this.trainerId = trainerId;
    this.rpcTimeout = rpcTimeout;
    this.maxBackoff = maxBackoff;
    this.stopping = stopping;
  }

  public long bytesPushed() {
    return bytesPushed.get();
  }

  public long bytesPulled() {
    return bytesPulled.get();
  }

  public long droppedPushes() {
    return droppedPushes.get();
  }

  /** Groups a pserver's blocks into request-sized runs. */
  private static List<List<BlockSpec>> groups(List<BlockSpec> blocks) {
    List<List<BlockSpec>> out = new ArrayList<>();
    List<BlockSpec> cur = new ArrayList<>();
    long bytes = 0;
    for (BlockSpec b : blocks) {
      if (!cur.isEmpty() && bytes + b.bytes() > MAX_REQUEST_BYTES) {
        out.add(cur);
        cur = new ArrayList<>();
        bytes = 0;
      }
      cur.add(b);
      bytes += b.bytes();
    }
    if (!cur.isEmpty()) {
      out.add(cur);
    }
    return out;
  }

  private ParameterServerGrpc.ParameterServerFutureStub stub(int ps) {
    ParameterServerGrpc.ParameterServerFutureStub s = directory.stub(ps);
    return s == null ? null : s.withDeadlineAfter(rpcTimeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Sends the gradients to every pserver concurrently. In asynchronous mode a pserver's blocks go
   * in requests of at most {@link #MAX_REQUEST_BYTES}; in synchronous mode each pserver gets
   * exactly one request per step (possibly empty: an idle trainer's contribution), because the
   * barrier counts one push per trainer. A pserver that fails has its part of the gradient dropped
   * (logged and counted); returns the number of requests applied.
   */
  public int push(Parameters grads, long step, Parameters latest) {
    Map<Integer, PushGradientsRequest> sparse = sparsePushes(grads, step);
    List<PushGradientsRequest> requests = new ArrayList<>();
    List<Integer> targets = new ArrayList<>();
    for (int ps = 0; ps < layout.pservers(); ps++) {
      List<List<BlockSpec>> groups = groups(layout.blocksOf(ps));
      if (sync) {
        PushGradientsRequest.Builder one = newPush(step);
        for (List<BlockSpec> group : groups) {
          addBlocks(one, group, grads);
        }
        PushGradientsRequest rows = sparse.get(ps);
        if (rows != null) {
          one.addAllSparseGradients(rows.getSparseGradientsList());
        }
        requests.add(one.build());
        targets.add(ps);
        continue;
      }
      for (List<BlockSpec> group : groups) {
        requests.add(addBlocks(newPush(step), group, grads).build());
        targets.add(ps);
      }
      if (sparse.containsKey(ps)) {
        requests.add(sparse.get(ps));
        targets.add(ps);
      }
    }
    List<ListenableFuture<?>> futures = new ArrayList<>();
    List<Integer> owners = new ArrayList<>();
    for (int i = 0; i < requests.size(); i++) {
      int ps = targets.get(i);
      ParameterServerGrpc.ParameterServerFutureStub s = stub(ps);
      if (s == null) {
        droppedPushes.incrementAndGet();
        log.warn("pserver {} is not registered; dropping its part of the gradient", ps);
        continue;
      }
      PushGradientsRequest req = requests.get(i);
      futures.add(s.pushGradients(req));
      owners.add(ps);
      for (TensorBlock b : req.getGradientsList()) {
        bytesPushed.addAndGet(b.getData().size());
      }
      for (SparseRows rows : req.getSparseGradientsList()) {
        bytesPushed.addAndGet(rows.getData().size());
      }
    }
    int ok = 0;
    for (int i = 0; i < futures.size(); i++) {
      int ps = owners.get(i);
      try {
        futures.get(i).get();
        ok++;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TrainerStoppedException("pushing gradients");
      } catch (ExecutionException e) {
        handlePushFailure(ps, e.getCause(), latest);
      }
    }
    return ok;
  }

  private void handlePushFailure(int ps, Throwable cause, Parameters latest) {
    droppedPushes.incrementAndGet();
    handleFailure(ps, cause, latest, "push to", "dropping this gradient and looking it up again");
  }

  private PushGradientsRequest.Builder newPush(long step) {
    return PushGradientsRequest.newBuilder().setTrainerId(trainerId).setStep(step);
  }

  private PushGradientsRequest.Builder addBlocks(
      PushGradientsRequest.Builder req, List<BlockSpec> group, Parameters grads) {
    for (BlockSpec b : group) {
      req.addGradients(
          TensorBlock.newBuilder()
              .setName(b.name())
              .setBlock(b.block())
              .setOffset(b.offset())
              .setDtype(gradientType)
              .setData(
                  TensorCodec.encode(
                      grads.dense(b.name()), (int) b.offset(), b.length(), gradientType)));
    }
    return req;
  }

  /** The sparse-row gradients of {@code grads}, one request per owning pserver. */
  private Map<Integer, PushGradientsRequest> sparsePushes(Parameters grads, long step) {
    Map<Integer, PushGradientsRequest.Builder> reqs = new TreeMap<>();
    for (ParameterDef def : layout.sparseTables()) {
      Parameters.SparseTable table = grads.sparse(def.name());
      if (table.rows().isEmpty()) {
        continue;
      }
      int width = table.width();
      Map<Integer, List<Long>> byOwner = new TreeMap<>();
      for (long id : table.rows().keySet()) {
        byOwner.computeIfAbsent(layout.ownerOfRow(def.name(), id), k -> new ArrayList<>()).add(id);
      }
      for (Map.Entry<Integer, List<Long>> e : byOwner.entrySet()) {
        float[] data = new float[e.getValue().size() * width];
        int i = 0;
        for (long id : e.getValue()) {
          System.arraycopy(table.rows().get(id), 0, data, i * width, width);
          i++;
        }
        reqs.computeIfAbsent(
                e.getKey(),
                k -> PushGradientsRequest.newBuilder().setTrainerId(trainerId).setStep(step))
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName(def.name())
                    .addAllRowIds(e.getValue())
                    .setDtype(gradientType)
                    .setData(TensorCodec.encode(data, 0, data.length, gradientType)));
      }
    }
    Map<Integer, PushGradientsRequest> out = new TreeMap<>();
    reqs.forEach((k, v) -> out.put(k, v.build()));
    return out;
  }

  /**
   * Pulls the rows of every sparse table that the ids touch into {@code params} (which should hold
   * no stale rows: the caller clears them), retrying until it succeeds.
   */
  public void pullRows(Parameters params, long[] ids) {
    if (layout.sparseTables().isEmpty() || ids.length == 0) {
      return;
    }
    Map<Integer, PullParametersRequest.Builder> reqs = new TreeMap<>();
    for (ParameterDef def : layout.sparseTables()) {
      Map<Integer, java.util.Set<Long>> byOwner = new TreeMap<>();
      for (long id : ids) {
        byOwner
            .computeIfAbsent(layout.ownerOfRow(def.name(), id), k -> new java.util.TreeSet<>())
            .add(id);
      }
      for (Map.Entry<Integer, java.util.Set<Long>> e : byOwner.entrySet()) {
        reqs.computeIfAbsent(
                e.getKey(), k -> PullParametersRequest.newBuilder().setTrainerId(trainerId))
            .addSparseRows(
                dev.paramserver.proto.v1.SparseRowsRef.newBuilder()
                    .setName(def.name())
                    .addAllRowIds(e.getValue()));
      }
    }
    for (Map.Entry<Integer, PullParametersRequest.Builder> e : reqs.entrySet()) {
      PullParametersResponse resp = pullWithRetry(e.getKey(), e.getValue().build(), params);
      for (SparseRows rows : resp.getSparseRowsList()) {
        Parameters.SparseTable table = params.sparse(rows.getName());
        float[] all = TensorCodec.decode(rows.getData(), rows.getDtype());
        int width = table.width();
        for (int i = 0; i < rows.getRowIdsCount(); i++) {
          table.put(
              rows.getRowIds(i), java.util.Arrays.copyOfRange(all, i * width, (i + 1) * width));
        }
        bytesPulled.addAndGet(rows.getData().size());
      }
    }
  }

  /** Pulls every block from every pserver into {@code params}, retrying until it succeeds. */
  public void pull(Parameters params) {
    // all pservers' first attempts go out at once; retries are per pserver
    List<ListenableFuture<PullParametersResponse>> futures = new ArrayList<>();
    List<Integer> owners = new ArrayList<>();
    List<List<BlockSpec>> groupsSent = new ArrayList<>();
    for (int ps = 0; ps < layout.pservers(); ps++) {
      for (List<BlockSpec> group : groups(layout.blocksOf(ps))) {
        ParameterServerGrpc.ParameterServerFutureStub s = stub(ps);
        futures.add(s == null ? null : s.pullParameters(pullRequest(group)));
        owners.add(ps);
        groupsSent.add(group);
      }
    }
    for (int i = 0; i < futures.size(); i++) {
      PullParametersResponse resp = null;
      try {
        resp = futures.get(i) == null ? null : futures.get(i).get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TrainerStoppedException("pulling parameters");
      } catch (ExecutionException e) {
        noteFailure(owners.get(i), e.getCause(), params);
      }
      if (resp == null) {
        resp = pullWithRetry(owners.get(i), pullRequest(groupsSent.get(i)), params);
      }
      store(resp, params);
    }
  }

  private PullParametersRequest pullRequest(List<BlockSpec> group) {
    PullParametersRequest.Builder req = PullParametersRequest.newBuilder().setTrainerId(trainerId);
    for (BlockSpec b : group) {
      req.addBlocks(BlockRef.newBuilder().setName(b.name()).setBlock(b.block()));
    }
    return req.build();
  }

  /**
   * Sends a pull to one pserver until it succeeds, with backoff, re-resolving the pserver after a
   * failure (pulls are safe to repeat).
   */
  private PullParametersResponse pullWithRetry(
      int ps, PullParametersRequest req, Parameters params) {
    Backoff backoff = Backoff.upTo(maxBackoff);
    while (true) {
      if (stopping.getAsBoolean()) {
        throw new TrainerStoppedException("pulling parameters from pserver " + ps);
      }
      ParameterServerGrpc.ParameterServerFutureStub s = stub(ps);
      if (s != null) {
        try {
          return s.pullParameters(req).get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new TrainerStoppedException("pulling parameters");
        } catch (ExecutionException e) {
          noteFailure(ps, e.getCause(), params);
        }
      } else {
        log.warn("pserver {} is not registered; waiting (attempt {})", ps, backoff.attempts() + 1);
        directory.invalidate(ps);
      }
      try {
        backoff.pause();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TrainerStoppedException("pulling parameters");
      }
    }
  }

  private void noteFailure(int ps, Throwable cause, Parameters latest) {
    handleFailure(ps, cause, latest, "pull from", "retrying");
  }

  /**
   * What a failed call to a pserver means: it lost its state (re-initialise it), it withdrew a
   * synchronous step (go on), it is unreachable (look it up again); anything else is a bug.
   */
  private void handleFailure(
      int ps, Throwable cause, Parameters latest, String call, String action) {
    ErrorReason reason = RpcErrors.reasonOf(cause);
    if (reason == ErrorReason.NOT_INITIALIZED) {
      log.warn(
          "pserver {} has no parameters (restarted without a checkpoint?); re-initialising", ps);
      initializer.reinitialise(ps, latest);
    } else if (reason == ErrorReason.SYNC_ABORTED) {
      log.warn(
          "{} pserver {}: the synchronous step was withdrawn ({})", call, ps, cause.getMessage());
    } else if (RpcErrors.isTransient(cause)) {
      log.warn(
          "{} pserver {} ({}) failed: {}; {}",
          call,
          ps,
          directory.address(ps),
          RpcErrors.codeOf(cause),
          action);
      directory.invalidate(ps);
    } else {
      throw cause instanceof StatusRuntimeException sre
          ? sre
          : new IllegalStateException(call + " pserver " + ps + " failed", cause);
    }
  }

  private void store(PullParametersResponse resp, Parameters params) {
    for (TensorBlock b : resp.getBlocksList()) {
      float[] dst = params.dense(b.getName());
      int n = TensorCodec.elementCount(b.getData(), b.getDtype());
      if (b.getOffset() + n > dst.length) {
        throw new IllegalStateException(
            "pserver returned block "
                + b.getName()
                + "#"
                + b.getBlock()
                + " with "
                + n
                + " values at offset "
                + b.getOffset()
                + ", beyond the parameter's "
                + dst.length
                + " values");
      }
      TensorCodec.decode(b.getData(), b.getDtype(), dst, (int) b.getOffset());
      bytesPulled.addAndGet(b.getData().size());
    }
  }
}
