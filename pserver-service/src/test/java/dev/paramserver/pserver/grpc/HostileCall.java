package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.grpc.HostileRequests.BLOCK;
import static dev.paramserver.pserver.grpc.HostileRequests.DENSE;
import static dev.paramserver.pserver.grpc.HostileRequests.DENSE_BLOCKS;
import static dev.paramserver.pserver.grpc.HostileRequests.HOSTILE_SHAPES;
import static dev.paramserver.pserver.grpc.HostileRequests.INIT_ID;
import static dev.paramserver.pserver.grpc.HostileRequests.OTHER_DTYPES;
import static dev.paramserver.pserver.grpc.HostileRequests.ROWS;
import static dev.paramserver.pserver.grpc.HostileRequests.SPARSE;
import static dev.paramserver.pserver.grpc.HostileRequests.lie;
import static dev.paramserver.pserver.grpc.HostileRequests.nonFinite;

import com.google.protobuf.Message;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterServerGrpc.ParameterServerBlockingStub;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * One call of the fuzz test: a request built like the trainer's and mutated by {@link Mutation},
 * and whether the server must refuse it whatever state the shard is in.
 */
record HostileCall(
    String what, boolean mustFail, Function<ParameterServerBlockingStub, Message> call) {

  @Override
  public String toString() {
    return what;
  }

  /** What is done to the valid request, each drawn with a seed for its details. */
  enum Mutation {
    PUSH_VALID(false),
    PUSH_DTYPE_FLIPPED(true),
    PUSH_LENGTH_LIES(true),
    PUSH_NON_FINITE(true),
    PUSH_VALID_THEN_NON_FINITE_ROWS(true),
    PUSH_WRONG_NAME(true),
    PUSH_OTHER_SHARDS_BLOCK(true),
    PUSH_BLOCK_OUT_OF_RANGE(true),
    PUSH_ROW_OUT_OF_RANGE(true),
    PUSH_DENSE_AS_ROWS(true),
    PUSH_TABLE_AS_BLOCK(true),
    PUSH_DUPLICATED_BLOCK(false),
    PUSH_DUPLICATED_ROW(false),
    PUSH_HUGE_OR_NEGATIVE_STEP(false),
    PUSH_HUGE_PART(false),
    PUSH_WINDOWED(false),
    PUSH_BEYOND_WINDOW(true),
    PUSH_ACKNOWLEDGED_NOT_BELOW_STEP(true),
    PULL_VALID(false),
    PULL_UNKNOWN_BLOCK(true),
    PULL_ROW_OUT_OF_RANGE(true),
    PULL_WRONG_TABLE(true),
    PULL_HUGE_MIN_STEP(false),
    INIT_VALID(false),
    INIT_OTHER_ID(false),
    INIT_EMPTY_ID(true),
    INIT_HOSTILE_SHAPE(false),
    INIT_SPEC_DTYPE_FLIPPED(true),
    INIT_BLOCK_DTYPE_FLIPPED(true),
    INIT_BLOCK_LENGTH_LIES(true),
    INIT_BLOCK_OFFSET_LIES(true),
    INIT_BLOCK_OUT_OF_RANGE(true),
    INIT_NAN_VALUES(false),
    INIT_UNKNOWN_MODE(true),
    INIT_UNKNOWN_OPTIMIZER(true),
    INIT_NON_FINITE_LEARNING_RATE(true),
    INIT_EMPTY_NAME(true),
    INIT_HUGE_BLOCK_SIZE(false),
    INIT_HUGE_TABLE_WIDTH(true),
    INIT_ROW_OUT_OF_RANGE(true),
    INIT_ROW_LENGTH_LIES(true),
    INIT_ROWS_OF_UNDEFINED_TABLE(true),
    FINISH_VALID(false),
    FINISH_OTHER_ID(false),
    FINISH_EMPTY_ID(true),
    FINISH_WRONG_COUNT(false),
    STATUS(false);

    final boolean mustFail;

    Mutation(boolean mustFail) {
      this.mustFail = mustFail;
    }

    HostileCall with(long seed) {
      Random r = new Random(seed);
      String what = name() + "#" + seed;
      return switch (this) {
        case PUSH_VALID,
            PUSH_DTYPE_FLIPPED,
            PUSH_LENGTH_LIES,
            PUSH_NON_FINITE,
            PUSH_VALID_THEN_NON_FINITE_ROWS,
            PUSH_WRONG_NAME,
            PUSH_OTHER_SHARDS_BLOCK,
            PUSH_BLOCK_OUT_OF_RANGE,
            PUSH_ROW_OUT_OF_RANGE,
            PUSH_DENSE_AS_ROWS,
            PUSH_TABLE_AS_BLOCK,
            PUSH_DUPLICATED_BLOCK,
            PUSH_DUPLICATED_ROW,
            PUSH_HUGE_OR_NEGATIVE_STEP,
            PUSH_HUGE_PART,
            PUSH_WINDOWED,
            PUSH_BEYOND_WINDOW,
            PUSH_ACKNOWLEDGED_NOT_BELOW_STEP -> {
          PushGradientsRequest p = push(r);
          // half of the pushes go over StreamPushes, which must answer as PushGradients does
          if (r.nextBoolean()) {
            yield new HostileCall(what + " (streamed)", mustFail, s -> streamed(s, p));
          }
          yield new HostileCall(what, mustFail, s -> s.pushGradients(p));
        }
        case PULL_VALID,
            PULL_UNKNOWN_BLOCK,
            PULL_ROW_OUT_OF_RANGE,
            PULL_WRONG_TABLE,
            PULL_HUGE_MIN_STEP -> {
          PullParametersRequest p = pull(r);
          yield new HostileCall(what, mustFail, s -> s.pullParameters(p));
        }
        case FINISH_VALID, FINISH_OTHER_ID, FINISH_EMPTY_ID, FINISH_WRONG_COUNT -> {
          var f =
              switch (this) {
                case FINISH_OTHER_ID -> HostileRequests.finish("other-" + r.nextInt(3), 2);
                case FINISH_EMPTY_ID -> HostileRequests.finish("", 2);
                case FINISH_WRONG_COUNT ->
                    HostileRequests.finish(INIT_ID, pick(r, List.of(0, 1, 3, -1, 1 << 30)));
                default -> HostileRequests.finish(INIT_ID, 2);
              };
          yield new HostileCall(what, mustFail, s -> s.finishInit(f));
        }
        case STATUS ->
            new HostileCall(
                what, false, s -> s.getShardStatus(GetShardStatusRequest.getDefaultInstance()));
        default -> {
          InitParametersRequest i = init(r);
          yield new HostileCall(what, mustFail, s -> s.initParameters(i));
        }
      };
    }

    private PushGradientsRequest push(Random r) {
      PushGradientsRequest valid = HostileRequests.push(r.nextLong(), 3 + r.nextInt(5));
      PushGradientsRequest.Builder p = valid.toBuilder();
      // the valid push's dense gradients, then its rows
      int g = r.nextInt(p.getGradientsCount());
      TensorBlock.Builder dense = p.getGradientsBuilder(g);
      SparseRows.Builder rows = p.getSparseGradientsBuilder(0);
      boolean onRows = r.nextBoolean();
      switch (this) {
        case PUSH_DTYPE_FLIPPED -> {
          int dtype = pick(r, OTHER_DTYPES);
          if (onRows) {
            rows.setDtypeValue(dtype);
          } else {
            dense.setDtypeValue(dtype);
          }
        }
        case PUSH_LENGTH_LIES -> {
          if (onRows) {
            rows.setData(lie(rows.getData(), r.nextInt()));
          } else {
            dense.setData(lie(dense.getData(), r.nextInt()));
          }
        }
        case PUSH_NON_FINITE -> {
          if (onRows) {
            rows.setData(nonFinite(rows.getData(), r.nextInt(), r.nextInt()));
          } else {
            dense.setData(nonFinite(dense.getData(), r.nextInt(), r.nextInt()));
          }
        }
        case PUSH_VALID_THEN_NON_FINITE_ROWS ->
            rows.setData(nonFinite(rows.getData(), r.nextInt(), r.nextInt()));
        case PUSH_WRONG_NAME -> {
          String name = pick(r, List.of("", "fc1.W", "fc2.w", " emb", "\u0000", "x".repeat(5000)));
          if (onRows) {
            rows.setName(name);
          } else {
            dense.setName(name);
          }
        }
        case PUSH_OTHER_SHARDS_BLOCK -> dense.setBlock(1);
        case PUSH_BLOCK_OUT_OF_RANGE -> dense.setBlock(pick(r, List.of(DENSE_BLOCKS, -1, 1 << 30)));
        case PUSH_ROW_OUT_OF_RANGE ->
            rows.setRowIds(
                r.nextInt(rows.getRowIdsCount()),
                pick(r, List.of(-1L, (long) ROWS, Long.MIN_VALUE, Long.MAX_VALUE)));
        case PUSH_DENSE_AS_ROWS -> rows.setName(DENSE);
        case PUSH_TABLE_AS_BLOCK -> dense.setName(SPARSE);
        case PUSH_DUPLICATED_BLOCK -> p.addGradients(dense.build());
        case PUSH_DUPLICATED_ROW ->
            rows.addRowIds(rows.getRowIds(0))
                .setData(rows.getData().concat(rows.getData().substring(0, 4 * 4)));
        case PUSH_HUGE_OR_NEGATIVE_STEP ->
            p.setStep(pick(r, List.of(-1L, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 62)));
        case PUSH_HUGE_PART -> p.setPart(pick(r, List.of(-1, 1 << 30, Integer.MAX_VALUE)));
        case PUSH_WINDOWED ->
            p.setStep(1 + r.nextInt(40))
                .setAcknowledgedThrough(r.nextInt(Math.toIntExact(p.getStep())));
        case PUSH_BEYOND_WINDOW ->
            // (steps of 2^63 and more read as negative: no identity, see
            // PUSH_HUGE_OR_NEGATIVE_STEP)
            p.setStep(pick(r, List.of(1025L, 5000L, Long.MAX_VALUE))).setAcknowledgedThrough(0);
        case PUSH_ACKNOWLEDGED_NOT_BELOW_STEP ->
            p.setStep(1 + r.nextInt(10))
                .setAcknowledgedThrough(p.getStep() + pick(r, List.of(0L, 1L, 1L << 40)));
        default -> {}
      }
      p.setReturnValues(r.nextBoolean());
      return p.build();
    }

    /** One push sent as the only request of a StreamPushes call: its answer, or its error. */
    private static Message streamed(ParameterServerBlockingStub s, PushGradientsRequest p) {
      CompletableFuture<PushGradientsResponse> answer = new CompletableFuture<>();
      StreamObserver<PushGradientsRequest> in =
          ParameterServerGrpc.newStub(s.getChannel())
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .streamPushes(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(PushGradientsResponse r) {
                      answer.complete(r);
                    }

                    @Override
                    public void onError(Throwable t) {
                      answer.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                      answer.completeExceptionally(
                          new IllegalStateException("StreamPushes ended without an answer"));
                    }
                  });
      in.onNext(p);
      in.onCompleted();
      try {
        return answer.get(20, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RuntimeException re) {
          throw re;
        }
        throw new IllegalStateException(e.getCause());
      } catch (InterruptedException | TimeoutException e) {
        throw new IllegalStateException("no answer to a streamed push", e);
      }
    }

    private PullParametersRequest pull(Random r) {
      PullParametersRequest.Builder p = HostileRequests.pull(r.nextLong()).toBuilder();
      switch (this) {
        case PULL_UNKNOWN_BLOCK ->
            p.addBlocks(
                BlockRef.newBuilder()
                    .setName(pick(r, List.of(DENSE, "", "fc2.w", SPARSE)))
                    .setBlock(pick(r, List.of(1, DENSE_BLOCKS, -1))));
        case PULL_ROW_OUT_OF_RANGE ->
            p.addSparseRows(
                SparseRowsRef.newBuilder()
                    .setName(SPARSE)
                    .addRowIds(2)
                    .addRowIds(pick(r, List.of(-1L, (long) ROWS, Long.MIN_VALUE))));
        case PULL_WRONG_TABLE ->
            p.addSparseRows(
                SparseRowsRef.newBuilder()
                    .setName(pick(r, List.of(DENSE, "", "emb2")))
                    .addRowIds(2));
        case PULL_HUGE_MIN_STEP -> p.setMinStep(pick(r, List.of(-1L, Long.MAX_VALUE)));
        default -> {}
      }
      return p.build();
    }

    /** The request this mutation makes of a valid init, drawn from seed 0. */
    InitParametersRequest initRequest() {
      return init(new Random(0));
    }

    private InitParametersRequest init(Random r) {
      InitParametersRequest.Builder i = HostileRequests.init(INIT_ID).toBuilder();
      // this pserver holds blocks 0 and 2 of fc1.w; block 1 is another pserver's
      i.removeBlocks(1);
      ParameterSpec.Builder dense = i.getParametersBuilder(0);
      ParameterSpec.Builder sparse = i.getParametersBuilder(1);
      TensorBlock.Builder block = i.getBlocksBuilder(r.nextInt(i.getBlocksCount()));
      SparseRows.Builder rows = i.getSparseRowsBuilder(0);
      if (mustFail && r.nextInt(3) == 0) {
        // a new initialiser's request, as bad: it must not drop the unfinished init either
        i.setInitId("other-" + r.nextInt(3));
      }
      switch (this) {
        case INIT_OTHER_ID -> i.setInitId("other-" + r.nextInt(3));
        case INIT_EMPTY_ID -> i.setInitId("");
        case INIT_HOSTILE_SHAPE -> {
          ParameterSpec.Builder spec = r.nextBoolean() ? dense : sparse;
          spec.clearShape().addAllShape(pick(r, HOSTILE_SHAPES));
          if (r.nextBoolean()) {
            i.clearBlocks().clearSparseRows();
          }
        }
        case INIT_SPEC_DTYPE_FLIPPED ->
            (r.nextBoolean() ? dense : sparse).setDtypeValue(pick(r, OTHER_DTYPES));
        case INIT_BLOCK_DTYPE_FLIPPED -> block.setDtypeValue(pick(r, OTHER_DTYPES));
        case INIT_BLOCK_LENGTH_LIES -> block.setData(lie(block.getData(), r.nextInt()));
        case INIT_BLOCK_OFFSET_LIES ->
            block.setOffset(pick(r, List.of(-1L, block.getOffset() + 1, (long) BLOCK * 7)));
        case INIT_BLOCK_OUT_OF_RANGE ->
            block.setBlock(pick(r, List.of(DENSE_BLOCKS, -1, 1 << 30))).setOffset(0);
        case INIT_NAN_VALUES -> block.setData(nonFinite(block.getData(), r.nextInt(), 0));
        case INIT_UNKNOWN_MODE -> i.setModeValue(pick(r, List.of(3, 99, -1)));
        case INIT_UNKNOWN_OPTIMIZER ->
            (r.nextBoolean() ? dense : sparse)
                .getOptimizerBuilder()
                .setKindValue(pick(r, List.of(7, 99, -1)));
        case INIT_NON_FINITE_LEARNING_RATE ->
            (r.nextBoolean() ? dense : sparse)
                .getOptimizerBuilder()
                .setLearningRate(pick(r, List.of(Float.NaN, Float.POSITIVE_INFINITY, -0.5f)));
        case INIT_EMPTY_NAME -> (r.nextBoolean() ? dense : sparse).setName("");
        case INIT_HUGE_BLOCK_SIZE -> dense.setBlockSize(pick(r, List.of(-1, 1 << 27, 1 << 30)));
        case INIT_HUGE_TABLE_WIDTH ->
            sparse.setShape(1, pick(r, List.of(0L, -4L, 1L << 31, Long.MAX_VALUE)));
        case INIT_ROW_OUT_OF_RANGE ->
            rows.setRowIds(r.nextInt(2), pick(r, List.of(-1L, (long) ROWS, Long.MIN_VALUE)));
        case INIT_ROW_LENGTH_LIES -> rows.setData(lie(rows.getData(), r.nextInt()));
        case INIT_ROWS_OF_UNDEFINED_TABLE -> rows.setName(pick(r, List.of("emb2", "", DENSE)));
        default -> {}
      }
      return i.build();
    }

    private static <T> T pick(Random r, List<T> from) {
      return from.get(r.nextInt(from.size()));
    }
  }
}
