package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.rpc.ErrorInfo;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.pserver.grpc.HostileCall.Mutation;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/**
 * Hostile inputs to the ParameterServer service (issue 26 item 5): random sequences of valid and
 * mutated requests (wrong dtypes, lengths that lie, NaN, hostile shapes, unknown enum numbers, huge
 * steps, duplicated ids, wrong names, another pserver's block) sent over the in-process transport
 * to the real service and shard, from every state a trainer can meet (nothing, an unfinished init,
 * initialised with updates, draining), so calls also come in the wrong order.
 *
 * <p>Each call either succeeds or fails with a status that is not UNKNOWN or INTERNAL and carries
 * an {@code ErrorInfo} reason; a failed call leaves the shard bit for bit as it was (values,
 * optimizer slots, update counts, sparse rows, applied-push records, status); a call that must fail
 * does (or is answered as a duplicate, changing nothing); and the server answers a valid call
 * afterwards. Each try runs up to 20 sequences; tries: {@code jqwik.tries.default}
 * (src/test/resources/junit-platform.properties), raised with {@code -Djqwik.tries.default=500} for
 * a long run.
 */
class PserverHostileInputFuzzTest {

  /** The state the shard is in when the calls start. */
  enum Start {
    EMPTY,
    UNFINISHED_INIT,
    READY,
    DRAINING
  }

  /** Calls sent, in order, to a shard brought to a start. */
  record Sequence(Start start, List<HostileCall> calls) {}

  @Property
  void hostileCalls_succeedOrAreRefusedWithAReason_andARefusalChangesNothing(
      @ForAll @Size(min = 1, max = 20) List<@From("sequences") Sequence> sequences)
      throws Exception {
    for (Sequence s : sequences) {
      check(s.start(), s.calls());
    }
  }

  @Provide
  Arbitrary<Sequence> sequences() {
    Arbitrary<HostileCall> call =
        Combinators.combine(Arbitraries.of(Mutation.class), Arbitraries.longs()).as(Mutation::with);
    return Combinators.combine(Arbitraries.of(Start.class), call.list().ofMinSize(1).ofMaxSize(4))
        .as(Sequence::new);
  }

  // The inputs that broke the pserver, shrunk, run in every build whatever the property draws.

  /** An unknown mode number initialised the shard in mode UNRECOGNIZED. */
  @Example
  void initWithUnknownMode_isRefused() throws Exception {
    checkSeeds(Start.EMPTY, Mutation.INIT_UNKNOWN_MODE);
  }

  /** A bad init of a new initialiser dropped the unfinished init before it was refused. */
  @Example
  void badInitOfANewInitialiser_keepsTheUnfinishedInit() throws Exception {
    checkSeeds(Start.UNFINISHED_INIT, Mutation.INIT_EMPTY_NAME);
  }

  /** A part of 2^32 - 1 (an int of -1) reached a BitSet: INTERNAL. */
  @Example
  void pushWithPartPast2To31_isRefusedWithItsReason() throws Exception {
    checkSeeds(Start.READY, Mutation.PUSH_HUGE_PART);
  }

  /** A refused push left an empty applied-push record of its trainer run. */
  @Example
  void refusedFirstPushOfARun_leavesNoAppliedRecord() throws Exception {
    checkSeeds(Start.UNFINISHED_INIT, Mutation.FINISH_VALID, Mutation.PUSH_TABLE_AS_BLOCK);
  }

  /** A block_size of 2^32 - 1 was refused INVALID_ARGUMENT without a reason. */
  @Example
  void initWithBlockSizePast2To31_isRefusedWithItsReason() throws Exception {
    checkSeeds(Start.EMPTY, Mutation.INIT_HUGE_BLOCK_SIZE);
  }

  /** {@link #check} of {@code mutations}, one call each, for seeds 0..15 (each detail drawn). */
  static void checkSeeds(Start start, Mutation... mutations) throws Exception {
    for (long seed = 0; seed < 16; seed++) {
      long s = seed;
      check(start, java.util.Arrays.stream(mutations).map(m -> m.with(s)).toList());
    }
  }

  /**
   * Runs {@code calls} against a shard brought to {@code start}: each call succeeds (a call that
   * must fail only as a duplicate, which the shard answers before looking at the gradients, and
   * which changes nothing) or is refused with a reason and changes nothing; the server answers
   * afterwards.
   */
  static void check(Start start, List<HostileCall> calls) throws Exception {
    try (Fixture f = new Fixture(start)) {
      for (HostileCall call : calls) {
        State before = f.state();
        Message answer = null;
        Throwable t = null;
        try {
          answer = call.call().apply(f.stub());
        } catch (RuntimeException e) {
          t = e;
        }
        if (t == null) {
          if (call.mustFail()) {
            assertThat(answer)
                .as("%s from %s was accepted", call, start)
                .isInstanceOfSatisfying(
                    PushGradientsResponse.class, r -> assertThat(r.getDuplicate()).isTrue());
            assertThat(f.state()).as("shard after duplicate %s", call).isEqualTo(before);
          }
          continue;
        }
        assertRefusedWithReason(t, call + " from " + start);
        assertThat(f.state()).as("shard after refused %s from %s", call, start).isEqualTo(before);
      }
      assertThat(f.stub().getShardStatus(GetShardStatusRequest.getDefaultInstance())).isNotNull();
      if (f.shard.initialised() && start != Start.DRAINING) {
        assertThat(f.stub().pullParameters(PullParametersRequest.getDefaultInstance()).getStep())
            .isEqualTo(f.shard.step());
      }
    }
  }

  /** The call failed with a chosen code and a {@code google.rpc.ErrorInfo} naming its reason. */
  static void assertRefusedWithReason(Throwable t, String what) {
    Status status = Status.fromThrowable(t);
    assertThat(status.getCode())
        .as("status of %s: %s", what, status)
        .isNotIn(Status.Code.UNKNOWN, Status.Code.INTERNAL, Status.Code.OK);
    assertThat(status.getDescription()).as("message of %s", what).isNotBlank();
    com.google.rpc.Status details = StatusProto.fromThrowable(t);
    assertThat(details).as("rich status of %s: %s", what, status).isNotNull();
    ErrorInfo info = null;
    for (Any any : details.getDetailsList()) {
      if (any.is(ErrorInfo.class)) {
        try {
          info = any.unpack(ErrorInfo.class);
        } catch (InvalidProtocolBufferException e) {
          throw new AssertionError(e);
        }
      }
    }
    assertThat(info).as("ErrorInfo of %s: %s", what, status).isNotNull();
    assertThat(info.getDomain()).isEqualTo(RpcErrors.DOMAIN);
    ErrorReason reason = ErrorReason.valueOf(info.getReason());
    assertThat(reason).isNotEqualTo(ErrorReason.ERROR_REASON_UNSPECIFIED);
    assertThat(RpcErrors.codeFor(reason)).as("code of %s", what).isEqualTo(status.getCode());
  }

  /**
   * What a refused call must leave as it was: the whole shard (its time cleared) and its status.
   */
  record State(ShardCheckpoint shard, ShardStatus status) {}

  /** The real service and shard over the in-process transport, brought to a {@link Start}. */
  static final class Fixture implements AutoCloseable {
    final ParameterShard shard = new ParameterShard(true);
    final ShardLifecycle lifecycle = Lifecycles.serving(shard, 0);
    private final ExecutorService executor = Executors.newCachedThreadPool();
    private final InProcessGrpc grpc = new InProcessGrpc();
    private final ParameterServerGrpc.ParameterServerBlockingStub stub;

    Fixture(Start start) {
      stub =
          ParameterServerGrpc.newBlockingStub(
              grpc.start(TestServices.parameterServer(shard, lifecycle, executor)));
      grpc.afterServers(executor::shutdownNow);
      if (start != Start.EMPTY) {
        stub().initParameters(Mutation.INIT_VALID.initRequest());
      }
      if (start == Start.READY || start == Start.DRAINING) {
        stub().finishInit(HostileRequests.finish(HostileRequests.INIT_ID, 2));
        for (long step = 1; step <= 2; step++) {
          stub().pushGradients(HostileRequests.push(step, step));
        }
      }
      if (start == Start.DRAINING) {
        lifecycle.drain();
      }
    }

    ParameterServerGrpc.ParameterServerBlockingStub stub() {
      return stub.withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    State state() {
      return new State(shard.snapshot().toBuilder().setCreatedMs(0).build(), shard.status());
    }

    @Override
    public void close() throws InterruptedException {
      grpc.close();
    }
  }
}
