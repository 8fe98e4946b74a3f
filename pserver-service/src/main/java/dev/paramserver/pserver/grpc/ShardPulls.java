package dev.paramserver.pserver.grpc;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.shard.AnswerArrays;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.LendingMarshaller;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;

/**
 * The pserver's pulls: by {@code PullParameters}, and on push streams ({@code StreamPushes}
 * requests with {@code pull}), where a pull that would wait or fail is declined so that the stream
 * and its pushes go on (the client makes it by {@code PullParameters}, which waits or names the
 * error). Both read the shard the same way and count the same bytes and rows.
 */
final class ShardPulls {
  private final ParameterShard shard;
  private final ShardMoves moves;
  private final ShardTraffic traffic;
  private final boolean zeroCopy;
  private final Counter pulledBytes;
  private final Counter pullRowsListed;
  private final Counter pullRowsLeftOut;
  private final Counter streamPullsAnswered;
  private final Counter streamPullsDeclined;
  // pull answers whose dense blocks are views of the shard's pooled arrays, given back once written
  private final LendingMarshaller<PullParametersResponse> pulls;
  // the push streams' answers, which lend the same way
  private final LendingMarshaller<PushGradientsResponse> answers;

  /**
   * @param pulledBytes bytes of parameters sent (push answers' values count there too)
   * @param answers the marshaller of push answers, which a pull on a stream is one of
   */
  ShardPulls(
      ParameterShard shard,
      ShardMoves moves,
      ShardTraffic traffic,
      boolean zeroCopy,
      MeterRegistry registry,
      Counter pulledBytes,
      LendingMarshaller<PushGradientsResponse> answers) {
    this.shard = shard;
    this.moves = moves;
    this.traffic = traffic;
    this.zeroCopy = zeroCopy;
    this.pulledBytes = pulledBytes;
    this.answers = answers;
    this.pulls =
        new LendingMarshaller<>(
            PullParametersResponse.getDefaultInstance(), a -> AnswerArrays.giveBack(shard, a));
    this.pullRowsListed =
        ParameterServerGrpcService.rows(
            registry, "paramserver.pserver.pull.rows", PULL_ROWS, "listed");
    this.pullRowsLeftOut =
        ParameterServerGrpcService.rows(
            registry, "paramserver.pserver.pull.rows", PULL_ROWS, "left_out");
    this.streamPullsAnswered = streamPulls(registry, "answered");
    this.streamPullsDeclined = streamPulls(registry, "declined");
  }

  /** The marshaller of {@code PullParameters} answers, which gives their lent arrays back. */
  LendingMarshaller<PullParametersResponse> marshaller() {
    return pulls;
  }

  private static final String PULL_ROWS =
      "Rows of pulls with a writer tag: listed in the answer, or left out (held rows only that"
          + " writer changed last)";

  private static Counter streamPulls(MeterRegistry registry, String outcome) {
    return Counter.builder("paramserver.pserver.stream.pulls")
        .description(
            "Pulls made on push streams (StreamPushes): answered there, or declined (made by"
                + " PullParameters instead)")
        .tag("outcome", outcome)
        .register(registry);
  }

  /** A pull by {@code PullParameters}: its answer is lent to {@link #marshaller} with zero-copy. */
  PullParametersResponse pull(PullParametersRequest request) {
    // written by the lending marshaller bound with zero-copy: its blocks' arrays go back then
    List<byte[]> lent = zeroCopy ? new ArrayList<>() : null;
    PullParametersResponse r = countedRead(request, lent);
    if (lent != null) {
      pulls.lend(r, lent);
    }
    return r;
  }

  /**
   * A pull on a push stream ({@link PushStream}), answered there in its turn; declined (the client
   * pulls by {@code PullParameters}) when it would wait or fails.
   */
  PushGradientsResponse onStream(PushGradientsRequest request) {
    if (request.getStep() != 0
        || request.getGradientsCount() > 0
        || request.getSparseGradientsCount() > 0) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "a StreamPushes request with pull carries nothing else: this one also has step "
              + request.getStep()
              + ", "
              + request.getGradientsCount()
              + " dense and "
              + request.getSparseGradientsCount()
              + " sparse gradients");
    }
    PullParametersRequest pull = request.getPull();
    if (!answersNow(pull)) {
      return declined(
          moves.awaitsMove()
              ? "a slot move to this pserver is not committed yet"
              : "min_step " + pull.getMinStep() + " is not applied yet");
    }
    List<byte[]> lent = zeroCopy ? new ArrayList<>() : null;
    PullParametersResponse r;
    try {
      r = countedRead(pull, lent);
    } catch (RuntimeException e) {
      return declined(e.getMessage() != null ? e.getMessage() : e.toString());
    }
    streamPullsAnswered.increment();
    PushGradientsResponse answer = PushGradientsResponse.newBuilder().setPulled(r).build();
    if (lent != null) {
      answers.lend(answer, lent);
    }
    return answer;
  }

  private PushGradientsResponse declined(String why) {
    streamPullsDeclined.increment();
    return PushGradientsResponse.newBuilder().setPullDeclined(why).build();
  }

  /** A pull answered on the transport thread: it waits for nothing. */
  boolean answersNow(PullParametersRequest request) {
    return (shard.mode() == TrainingMode.ASYNC || request.getMinStep() <= shard.step())
        && !moves.awaitsMove();
  }

  /**
   * Reads a pull's values and counts them; with {@code lent} (zero-copy) the answer's dense blocks
   * may be views of pooled arrays, added to it.
   */
  private PullParametersResponse countedRead(PullParametersRequest request, List<byte[]> lent) {
    PullParametersResponse r =
        lent != null ? AnswerArrays.pull(shard, request, lent) : shard.pull(request);
    pulledBytes.increment(r.getSerializedSize());
    traffic.pull();
    if (r.getRowsChangedOnly()) {
      long asked = 0;
      for (SparseRowsRef ref : request.getSparseRowsList()) {
        asked += ref.getRowIdsCount();
      }
      long listed = 0;
      for (SparseRows rows : r.getSparseRowsList()) {
        listed += rows.getRowIdsCount();
      }
      pullRowsListed.increment(listed);
      pullRowsLeftOut.increment(asked - listed);
    }
    return r;
  }
}
