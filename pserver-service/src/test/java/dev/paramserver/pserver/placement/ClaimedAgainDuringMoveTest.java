package dev.paramserver.pserver.placement;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A new owner that stops serving during a slot move (its etcd lease lost: it claims its index again
 * and reloads its state from its checkpoint and log) must not let that move commit: what it staged
 * for the move is gone with the reload. Seen in a soak: the new owner answered the move's {@code
 * caught_up} while it reloaded, the coordinator committed, and the reload had dropped the moved
 * rows as not owned yet; 2,073 acknowledged pushes were lost. Real pservers and etcd; the windows
 * are made by holding the move's stream, not by timing.
 */
class ClaimedAgainDuringMoveTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  /**
   * The lease is found lost (the shard stops serving at once) while the move's stream is held; the
   * stream's {@code caught_up} then reaches the new owner, which refuses it: the old owner gets an
   * error, the coordinator makes the move again, and every push is applied once.
   */
  @Test
  @Timeout(120)
  void caughtUpAfterTheNewOwnerStoppedServing_isRefused_andNothingIsLost() throws Exception {
    FencedMoveAttemptsTest.Hold hold = new FencedMoveAttemptsTest.Hold(1);
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.start(0, 2, new ChannelFactory(null, List.of(hold)));
      c.start(1, 2);
      c.initialise(2);
      c.setDesired(3);
      c.start(2, 3);
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      List<Thread> threads = new ArrayList<>();
      PlacementPusher pusher = FencedMoveAttemptsTest.startPusher(c, sums, 29, threads);

      SlotMap start = c.committed(2);
      SlotMove planned = FencedMoveAttemptsTest.firstMoveOf0(start, "reclaimed-0");
      SlotMove first = planned.toBuilder().setAttempt(1).build();
      assertThat(c.store.begin(c.store.read(), first)).isTrue();
      CompletableFuture<MoveOutResponse> out1 =
          CompletableFuture.supplyAsync(() -> c.moves(0).moveOut(first));
      assertThat(hold.reached.await(30, TimeUnit.SECONDS))
          .as("attempt 1 cut its copy and waits for the new owner")
          .isTrue();

      // the new owner's lease is found lost: it stops serving before it claims anything again
      ShardLifecycle newOwner = c.context(2).getBean(ShardLifecycle.class);
      assertThat(newOwner.leaseLost("the test: lease lost during the move")).isTrue();
      hold.released = true;
      Throwable failed = null;
      try {
        MoveOutResponse answered = out1.get(30, TimeUnit.SECONDS);
        assertThat(answered).as("attempt 1 answered by a new owner that stopped serving").isNull();
      } catch (ExecutionException e) {
        failed = e.getCause();
      }
      assertThat(failed).as("attempt 1 refused by the new owner").isNotNull();
      assertThat(c.store.read().epoch()).as("nothing committed").isEqualTo(start.epoch());

      // the coordinator makes the move again once pserver 2 serves again
      c.stop(2);
      c.start(2, 3);
      if (c.store.read().move().isPresent()) {
        assertThat(c.store.abort(c.store.read())).isTrue();
      }
      SlotMove second = planned.toBuilder().setAttempt(2).build();
      assertThat(c.store.begin(c.store.read(), second)).isTrue();
      assertThat(c.moves(0).moveOut(second).getRows()).isPositive();
      SlotMap moved = start.with(second);
      assertThat(c.store.commit(c.store.read(), moved.toProto())).isTrue();
      FencedMoveAttemptsTest.finish(c, pusher, sums, threads, moved);
    }
  }

  /**
   * A move into a pserver is in progress in etcd when that pserver claims its index again (its
   * lease revoked, as etcd does when keep-alives stop): whatever it staged is gone with the reload,
   * so the claim rolls that attempt back in etcd, fenced, even though the reloaded shard no longer
   * remembers the move.
   */
  @Test
  @Timeout(120)
  void aClaimDuringAMoveIntoThisPserver_rollsThatAttemptBack() throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      SlotMap start = c.committed(2);
      SlotMove first =
          FencedMoveAttemptsTest.firstMoveOf0(start, "reclaimed-1").toBuilder()
              .setAttempt(1)
              .build();
      assertThat(c.store.begin(c.store.read(), first)).isTrue();

      long leaseId = c.coordinator.kv().get(c.coordinator.keys().ps(2)).orElseThrow().leaseId();
      try (Client client = Client.builder().endpoints(etcd.endpoint()).build()) {
        client.getLeaseClient().revoke(leaseId).get(10, TimeUnit.SECONDS);
      }
      Poll.until(
          Duration.ofSeconds(30),
          () ->
              c.coordinator
                  .kv()
                  .get(c.coordinator.keys().ps(2))
                  .map(kv -> kv.leaseId() != leaseId)
                  .orElse(false),
          "ps/2 claimed again under a new lease");
      Poll.until(
          Duration.ofSeconds(30),
          () -> c.store.read().move().isEmpty(),
          "attempt 1 rolled back by the new claim of pserver 2");
      assertThat(c.store.read().epoch()).as("nothing committed").isEqualTo(start.epoch());
    }
  }
}
