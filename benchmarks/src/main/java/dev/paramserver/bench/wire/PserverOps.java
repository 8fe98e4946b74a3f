package dev.paramserver.bench.wire;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.ManagedChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Push, pull and push+pull of one whole parameter, done the way the trainer's {@code
 * ParameterClient} does it: the project's client channel ({@link Channels#forAddress}), blocks
 * grouped into requests of at most 2 MiB of tensor data, all of an operation's requests in flight
 * at once; gradients encoded from a {@code float[]}, pulled values decoded into one. Push+pull is
 * one round trip: a push with {@code return_values}, whose answer carries the blocks' new values.
 * As an {@link Op} each operation runs to completion; as an {@link AsyncOp} several are kept in
 * flight on the one channel.
 */
public final class PserverOps implements Op, AsyncOp {
  /** Same cap as the trainer's RequestPlanner.MAX_REQUEST_BYTES. */
  static final int MAX_REQUEST_BYTES = 2 * 1024 * 1024;

  public enum Kind {
    PUSH,
    PULL,
    PUSH_PULL
  }

  private final Kind kind;
  private final String name;
  private final int blockSize;
  private final ManagedChannel channel;
  private final ParameterServerGrpc.ParameterServerFutureStub stub;
  private final float[] values;
  private final float[] grads;
  private final List<int[]> groups; // each: first block, block count
  private final int blocks;
  private long step;
  private final String session = UUID.randomUUID().toString();

  public PserverOps(Kind kind, String address, String name, int elements, int blockSize) {
    this.kind = kind;
    this.name = name;
    this.blockSize = blockSize;
    this.channel = Channels.forAddress(address);
    this.stub = ParameterServerGrpc.newFutureStub(channel);
    this.values = new float[elements];
    this.grads = new float[elements];
    Arrays.fill(grads, 1e-7f);
    this.blocks = (elements + blockSize - 1) / blockSize;
    this.groups = new ArrayList<>();
    int perGroup = Math.max(1, MAX_REQUEST_BYTES / (blockSize * 4));
    for (int b = 0; b < blocks; b += perGroup) {
      groups.add(new int[] {b, Math.min(perGroup, blocks - b)});
    }
  }

  private int length(int block) {
    return Math.min(blockSize, values.length - block * blockSize);
  }

  private ParameterServerGrpc.ParameterServerFutureStub deadline() {
    return stub.withDeadlineAfter(30, TimeUnit.SECONDS);
  }

  @Override
  public void run() throws Exception {
    for (ListenableFuture<?> f : send()) {
      accept(f.get());
    }
  }

  @Override
  public void start(Completion c) {
    List<ListenableFuture<?>> futures = send();
    AtomicInteger left = new AtomicInteger(futures.size());
    AtomicBoolean failed = new AtomicBoolean();
    for (ListenableFuture<?> f : futures) {
      Futures.addCallback(
          f,
          new FutureCallback<Object>() {
            @Override
            public void onSuccess(Object result) {
              try {
                accept(result);
              } catch (RuntimeException e) {
                onFailure(e);
                return;
              }
              if (left.decrementAndGet() == 0) {
                c.done();
              }
            }

            @Override
            public void onFailure(Throwable t) {
              if (failed.compareAndSet(false, true)) {
                c.failed(t);
              }
            }
          },
          MoreExecutors.directExecutor());
    }
  }

  /** Sends one operation's requests (all in flight at once). */
  private List<ListenableFuture<?>> send() {
    return kind == Kind.PULL ? pull() : push(kind == Kind.PUSH_PULL);
  }

  /** Decodes the values an answer carries (a pull's, or a push's with return_values). */
  private void accept(Object answer) {
    List<TensorBlock> blocks =
        answer instanceof PullParametersResponse p
            ? p.getBlocksList()
            : ((PushGradientsResponse) answer).getBlocksList();
    for (TensorBlock b : blocks) {
      TensorCodec.decode(b.getData(), b.getDtype(), values, (int) b.getOffset());
    }
  }

  private synchronized List<ListenableFuture<?>> push(boolean returnValues) {
    List<ListenableFuture<?>> futures = new ArrayList<>(groups.size());
    // one step per push, one part per request, in this client's own session: as a trainer does
    step++;
    int part = 0;
    for (int[] g : groups) {
      PushGradientsRequest.Builder req =
          PushGradientsRequest.newBuilder()
              .setTrainerId("bench")
              .setSession(session)
              .setStep(step)
              .setPart(part++)
              .setReturnValues(returnValues);
      for (int b = g[0]; b < g[0] + g[1]; b++) {
        req.addGradients(
            TensorBlock.newBuilder()
                .setName(name)
                .setBlock(b)
                .setOffset((long) b * blockSize)
                .setDtype(DataType.FLOAT32)
                .setData(TensorCodec.encode(grads, b * blockSize, length(b))));
      }
      futures.add(deadline().pushGradients(req.build()));
    }
    return futures;
  }

  private List<ListenableFuture<?>> pull() {
    List<ListenableFuture<?>> futures = new ArrayList<>(groups.size());
    for (int[] g : groups) {
      PullParametersRequest.Builder req = PullParametersRequest.newBuilder().setTrainerId("bench");
      for (int b = g[0]; b < g[0] + g[1]; b++) {
        req.addBlocks(BlockRef.newBuilder().setName(name).setBlock(b));
      }
      futures.add(deadline().pullParameters(req.build()));
    }
    return futures;
  }

  @Override
  public void close() {
    Channels.close(channel);
  }
}
