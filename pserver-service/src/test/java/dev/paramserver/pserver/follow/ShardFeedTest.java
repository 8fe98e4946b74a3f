package dev.paramserver.pserver.follow;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.ParameterShard;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShardFeedTest {
  private static ParameterShard initialised() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init("i1", List.of(dense("w", 4, 4, sgd(1f))), List.of(block("w", 0, 4, 1, 2, 3, 4))));
    shard.finishInit(finish("i1", 1));
    return shard;
  }

  @Test
  void applied_beyondAFollowersQueue_cutsItOffWithoutWaiting() throws Exception {
    ShardFeed feed = new ShardFeed(initialised(), () -> 0L);
    Follower f = feed.follow(0, 0, "i1");
    WalRecord r = WalRecord.newBuilder().setInitId("i1").build();
    for (int i = 1; i <= ShardFeed.QUEUE_RECORDS + 1; i++) {
      feed.applied(i, r);
    }
    assertThat(f.tooSlow()).isTrue();
    assertThat(f.isCut()).isTrue();
    assertThat(feed.followers()).isZero();
  }

  @Test
  void applied_withAGapInTheSequence_drawsANewEpochAndCutsTheFollowers() throws Exception {
    ShardFeed feed = new ShardFeed(initialised(), () -> 0L);
    Follower f = feed.follow(0, 0, "i1");
    long epoch = feed.epoch();
    WalRecord r = WalRecord.getDefaultInstance();
    feed.applied(1, r);
    feed.applied(5, r);
    assertThat(feed.epoch()).isNotEqualTo(epoch);
    assertThat(f.isCut()).isTrue();
    assertThat(f.tooSlow()).isFalse();
  }

  @Test
  void follow_ofAShardNotInitialised_isRefusedNamingTheShard() {
    ShardFeed feed = new ShardFeed(new ParameterShard(true), () -> 0L);
    assertThatThrownBy(() -> feed.follow(0, 0, ""))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("not initialised");
  }
}
