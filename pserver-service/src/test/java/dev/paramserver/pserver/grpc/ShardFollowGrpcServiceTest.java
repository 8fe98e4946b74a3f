package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.ShardFollowGrpc;
import dev.paramserver.pserver.follow.ShardFeed;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.Context;
import io.grpc.ServerInterceptors;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ShardFollowGrpcServiceTest {
  private static final ParameterSpec W = dense("fc1.w", 6, 4, sgd(0.5f));

  @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();

  private ParameterShard shard;
  private ShardFollowGrpc.ShardFollowBlockingStub stub;

  @BeforeEach
  void start() {
    shard = new ParameterShard(true);
    shard.init(
        init(
            "i1",
            List.of(W),
            List.of(block("fc1.w", 0, 4, 1, 2, 3, 4), block("fc1.w", 1, 4, 5, 6))));
    shard.finishInit(finish("i1", 2));
    ShardLifecycle lifecycle = Lifecycles.serving(shard, 0);
    ShardFeed feed = new ShardFeed(shard, System::currentTimeMillis);
    stub =
        ShardFollowGrpc.newBlockingStub(
            grpc.start(
                ServerInterceptors.intercept(
                    new ShardFollowGrpcService(feed, lifecycle), new ErrorMappingInterceptor())));
  }

  private void pushOnce(float g) {
    shard.push(push(gradient("fc1.w", 0, g, g, g, g), gradient("fc1.w", 1, g, g)));
  }

  private Iterator<FollowMessage> follow(long epoch, long from) {
    return stub.withDeadlineAfter(10, TimeUnit.SECONDS)
        .follow(
            FollowRequest.newBuilder()
                .setIndex(0)
                .setEpoch(epoch)
                .setFromSeq(from)
                .setInitId("i1")
                .build());
  }

  @Test
  void follow_startsWithACopyAtTheCut_thenRecordsInOrder_andTheFollowerHoldsThePrimarysValues()
      throws Exception {
    pushOnce(1f);
    pushOnce(2f);
    ParameterShard follower = new ParameterShard(true);
    try (Context.CancellableContext call = Context.current().withCancellation()) {
      Iterator<FollowMessage> stream = call.call(() -> follow(0, 0));
      FollowMessage first = stream.next();
      assertThat(first.getCopy().getSequence()).isEqualTo(2);
      assertThat(first.getCopy().getLast()).isTrue();
      follower.restore(ShardCheckpoint.parseFrom(first.getCopy().getData()));
      assertThat(follower.step()).isEqualTo(2);
      pushOnce(3f);
      pushOnce(-4f);
      for (long seq = 3; seq <= 4; seq++) {
        FollowMessage m = stream.next();
        assertThat(m.getEpoch()).isEqualTo(first.getEpoch());
        assertThat(m.getRecord().getSequence()).isEqualTo(seq);
        assertThat(follower.replayReplicated(m.getRecord().getRecord())).isTrue();
        assertThat(follower.step()).isEqualTo(seq);
      }
      call.cancel(null);
    }
    PullParametersRequest all = PullParametersRequest.getDefaultInstance();
    assertThat(follower.pull(all).getBlocksList()).isEqualTo(shard.pull(all).getBlocksList());
  }

  @Test
  void follow_inTheSameEpoch_resumesAfterFromSeqWithoutACopy() throws Exception {
    pushOnce(1f);
    long epoch;
    try (Context.CancellableContext call = Context.current().withCancellation()) {
      Iterator<FollowMessage> stream = call.call(() -> follow(0, 0));
      epoch = stream.next().getEpoch();
      pushOnce(2f);
      assertThat(stream.next().getRecord().getSequence()).isEqualTo(2);
      call.cancel(null);
    }
    pushOnce(3f);
    try (Context.CancellableContext call = Context.current().withCancellation()) {
      Iterator<FollowMessage> stream = call.call(() -> follow(epoch, 2));
      FollowMessage m = stream.next();
      assertThat(m.hasRecord()).isTrue();
      assertThat(m.getRecord().getSequence()).isEqualTo(3);
      call.cancel(null);
    }
    try (Context.CancellableContext call = Context.current().withCancellation()) {
      Iterator<FollowMessage> stream = call.call(() -> follow(epoch + 1, 2));
      assertThat(stream.next().getCopy().getSequence()).isEqualTo(3);
      call.cancel(null);
    }
  }

  @Test
  void follow_ofAnotherShard_isRefusedAsNotPrimary() {
    assertThatThrownBy(
            () ->
                stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                    .follow(FollowRequest.newBuilder().setIndex(3).build())
                    .next())
        .satisfies(e -> assertThat(RpcErrors.reasonOf(e)).isEqualTo(ErrorReason.NOT_PRIMARY))
        .hasMessageContaining("not the primary of shard 3");
  }
}
