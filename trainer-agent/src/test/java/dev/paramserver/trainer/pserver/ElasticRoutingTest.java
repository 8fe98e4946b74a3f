package dev.paramserver.trainer.pserver;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.testing.FakePserver;
import dev.paramserver.trainer.testing.PserverCluster;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A job's placement changing while the trainer pushes and pulls (docs/explanation/elastic.md,
 * "Trainers"), over in-process gRPC against fake pservers, with the placement map written in a real
 * etcd as the coordinator writes it ({@link PlacementStore#begin}, {@link PlacementStore#commit},
 * {@link PlacementStore#abort}). The moves touch only slots no row of the test held before, so no
 * data needs moving: the old owner refuses the moving row with MOVED as a real one would.
 */
@Timeout(60)
class ElasticRoutingTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final ModelSpec SPARSE =
      new ModelSpec("sparse-lr", 50, 2, List.of(), Mlp.Activation.RELU, 4);

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private PlacementStore placement;
  private FakePserver added;
  private Parameters values;
  private String emb;
  private SlotMap initial;
  // a row of pserver `from` that moves to the new index 2, and one that stays on `from`
  private long moving;
  private long staying;
  private int from;

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    cluster = new PserverCluster(coordinator, SPARSE, 2, 8, false);
    values = Initializers.initial(cluster.model, 7);
    cluster.initializer.ensureAll(values);
    placement = new PlacementStore(coordinator);
    ModelLayout layout = cluster.planner.layout();
    emb = layout.sparseTables().get(layout.sparseTables().size() - 1).name();
    initial = SlotMap.initial(layout.blocks(), 2);
    moving = 1_000_003;
    from = initial.ownerOfRow(ShardPlacement.tableHash(emb), moving);
    staying = moving + 1;
    while (initial.ownerOfRow(ShardPlacement.tableHash(emb), staying) != from
        || slotOf(staying) == slotOf(moving)) {
      staying++;
    }
    // a pserver added to the job: registered, owning nothing until a move gives it a slot
    added = new FakePserver(PserverCluster.LEARNING_RATE);
    coordinator.kv().put(coordinator.keys().ps(2), added.address().getBytes(UTF_8));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.client.streams().close(java.time.Duration.ofSeconds(2));
    cluster.close();
    added.close();
    coordinator.close();
  }

  private int slotOf(long row) {
    return initial.slotOf(ShardPlacement.tableHash(emb), row);
  }

  /** The move of {@link #moving}'s slot to index 2, at {@code epoch}. */
  private SlotMove moveOfTheRow(long epoch) {
    return SlotMove.newBuilder()
        .setEpoch(epoch)
        .setFrom(from)
        .setTo(2)
        .addSlots(slotOf(moving))
        .setSlotCount(initial.slots())
        .setId("move-" + epoch)
        .build();
  }

  private void begin(SlotMove move) {
    assertThat(placement.begin(placement.read(), move)).isTrue();
  }

  private void commit(PlacementMap next) {
    assertThat(placement.commit(placement.read(), next)).isTrue();
  }

  private Parameters rowGradients(long... rows) {
    Parameters grads = Parameters.zerosLike(cluster.model);
    Parameters.SparseTable table = grads.sparse(emb);
    for (long row : rows) {
      float[] g = new float[table.width()];
      java.util.Arrays.fill(g, 1f);
      table.put(row, g);
    }
    return grads;
  }

  private static boolean carries(PushGradientsRequest req, String table, long row) {
    for (SparseRows rows : req.getSparseGradientsList()) {
      if (rows.getName().equals(table) && rows.getRowIdsList().contains(row)) {
        return true;
      }
    }
    return false;
  }

  /** Commits the move of {@link #moving}'s row after {@code ms}, while the trainer waits. */
  private CompletableFuture<Void> commitLater(SlotMove move, long ms) {
    return CompletableFuture.runAsync(
        () -> commit(initial.with(move).toProto()),
        CompletableFuture.delayedExecutor(ms, TimeUnit.MILLISECONDS));
  }

  @Test
  void committedEpochs_areFollowed_andAnIndexOwningNothingIsNeverInitialised() throws Exception {
    ModelLayout layout = cluster.planner.layout();
    // epoch 1: three pservers, index 2 owning nothing yet
    begin(SlotMove.newBuilder().setEpoch(1).setFrom(0).setTo(2).setId("empty").build());
    commit(initial.toProto().toBuilder().setEpoch(1).setPservers(3).build());
    assertThat(layout.awaitEpoch(1, 10_000)).as("the trainer follows epoch 1").isTrue();
    assertThat(layout.pservers()).isEqualTo(3);

    cluster.initializer.ensureAll(values);
    assertThat(added.inits()).as("trainers never initialise an empty pserver").isZero();

    // epoch 2: the moving row's slot goes to index 2 (filled by the move, here: installed empty)
    added.installedByMove(layout.specs());
    SlotMove move = moveOfTheRow(2);
    begin(move);
    commit(initial.with(move).toProto());
    assertThat(layout.awaitEpoch(2, 10_000)).as("the trainer follows epoch 2").isTrue();

    cluster.client.push(rowGradients(moving, staying), values);
    assertThat(added.lastPushes(added.pushes()))
        .as("the row of the moved slot goes to its new owner, directly")
        .anySatisfy(
            r -> {
              assertThat(carries(r, emb, moving)).isTrue();
              assertThat(r.getOrigin()).isZero();
            });
    assertThat(cluster.get(from).lastPushes(cluster.get(from).pushes()))
        .noneMatch(r -> carries(r, emb, moving))
        .anyMatch(r -> carries(r, emb, staying));

    int pulls = added.pulls();
    Parameters pulled = Parameters.zerosLike(cluster.model);
    cluster.client.pullRows(pulled, new long[] {moving});
    assertThat(added.pulls()).isEqualTo(pulls + 1);
    assertThat(pulled.sparse(emb).contains(moving)).isTrue();
  }

  @Test
  void aStreamedPushRefusedWithMoved_isResentInPieces_onceTheEpochIsCommitted() {
    added.installedByMove(cluster.planner.layout().specs());
    SlotMove move = moveOfTheRow(1);
    begin(move);
    cluster.get(from).refuseMoved(k -> k.equals(emb + "#" + moving), 2, 1);
    long start = System.nanoTime();
    CompletableFuture<Void> committed = commitLater(move, 300);

    Parameters into = Parameters.zerosLike(cluster.model);
    StreamedPush push =
        cluster.client.startPush(rowGradients(moving, staying), values, into, false);
    cluster.client.streams().await(push);

    long waitedMs = (System.nanoTime() - start) / 1_000_000;
    committed.join();
    assertThat(push.isComplete()).isTrue();
    assertThat(push.acknowledged()).isCompleted();
    assertThat(waitedMs).as("the resend waited for the commit").isGreaterThanOrEqualTo(250);
    assertThat(cluster.get(from).refusedMoved()).as("refused once: no resend before").isEqualTo(1);
    assertThat(cluster.traffic.movedRequests()).isEqualTo(1);
    assertResentInPieces();
  }

  @Test
  void aUnaryPushRefusedWithMoved_isResentInPieces_onceTheEpochIsCommitted() {
    added.installedByMove(cluster.planner.layout().specs());
    SlotMove move = moveOfTheRow(1);
    begin(move);
    cluster.get(from).refuseMoved(k -> k.equals(emb + "#" + moving), 2, 1);
    CompletableFuture<Void> committed = commitLater(move, 300);

    int planned = cluster.planner.pushes(rowGradients(moving, staying), 1).size();
    assertThat(cluster.client.push(rowGradients(moving, staying), values)).isEqualTo(planned);

    committed.join();
    assertThat(cluster.get(from).refusedMoved()).isEqualTo(1);
    assertResentInPieces();
  }

  /**
   * The refused part went as two pieces with its identity and origin: the moving row to index 2,
   * the staying one back to {@code from}, each applied once.
   */
  private void assertResentInPieces() {
    FakePserver old = cluster.get(from);
    PushGradientsRequest refused =
        old.lastPushes(old.pushes()).stream()
            .filter(r -> r.getOrigin() == 0 && carries(r, emb, moving))
            .findFirst()
            .orElseThrow();
    String identity =
        refused.getTrainerId()
            + "/"
            + refused.getSession()
            + "/"
            + refused.getStep()
            + "/"
            + refused.getPart();
    assertThat(added.lastPushes(added.pushes()))
        .filteredOn(r -> carries(r, emb, moving))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.getOrigin()).isEqualTo(from + 1);
              assertThat(r.getAcknowledgedThrough())
                  .as("the origin's acknowledgements")
                  .isEqualTo(refused.getAcknowledgedThrough());
              assertThat(r.getSession()).isEqualTo(refused.getSession());
              assertThat(r.getStep()).isEqualTo(refused.getStep());
              assertThat(r.getPart()).isGreaterThanOrEqualTo(ResentParts.FIRST);
              assertThat(carries(r, emb, staying)).isFalse();
            });
    String step = refused.getTrainerId() + "/" + refused.getSession() + "/" + refused.getStep();
    assertThat(resentApplications(added, step, from + 1)).containsExactly(1);
    assertThat(old.applications()).doesNotContainKey(identity);
    assertThat(resentApplications(old, step, from + 1)).containsExactly(1);
    assertThat(cluster.planner.layout().routing().epoch()).isEqualTo(1);
    assertThat(cluster.traffic.droppedPushes()).isZero();
  }

  /**
   * How often each resent piece of {@code step} (a part of its own, from {@code origin}) applied.
   */
  private static List<Integer> resentApplications(FakePserver server, String step, int origin) {
    return server.applications().entrySet().stream()
        .filter(e -> e.getKey().startsWith(step + "/") && e.getKey().endsWith("@" + origin))
        .filter(
            e -> {
              String part = e.getKey().substring(step.length() + 1, e.getKey().indexOf('@'));
              return Integer.parseInt(part) >= ResentParts.FIRST;
            })
        .map(Map.Entry::getValue)
        .toList();
  }

  /**
   * Index 2 owns the moving row's slot (epoch 1), then is gone (deregistered) while a push planned
   * by epoch 1 is sent to it; once epoch 2 gives the slot back to {@code from} and index 2 nothing
   * (a shrink emptied it), the push goes by epoch 2, as a piece resent after MOVED would.
   */
  private void pushToAnEmptiedPserverGone(boolean streamed) throws Exception {
    added.installedByMove(cluster.planner.layout().specs());
    SlotMove there = moveOfTheRow(1);
    begin(there);
    commit(initial.with(there).toProto());
    assertThat(cluster.planner.layout().awaitEpoch(1, 10_000)).isTrue();
    coordinator.kv().delete(coordinator.keys().ps(2));
    added.close();
    SlotMove back =
        SlotMove.newBuilder()
            .setEpoch(2)
            .setFrom(2)
            .setTo(from)
            .addSlots(slotOf(moving))
            .setSlotCount(initial.slots())
            .setId("back-2")
            .build();
    begin(back);
    PlacementMap emptied = initial.with(there).with(back).toProto();
    assertThat(PserverDirectory.owners(java.util.Optional.of(emptied), 0)).doesNotContain(2);
    CompletableFuture<Void> committed =
        CompletableFuture.runAsync(
            () -> commit(emptied), CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));

    if (streamed) {
      StreamedPush push =
          cluster.client.startPush(
              rowGradients(moving, staying), values, Parameters.zerosLike(cluster.model), false);
      cluster.client.streams().await(push);
      assertThat(push.acknowledged()).isCompleted();
    } else {
      cluster.client.push(rowGradients(moving, staying), values);
    }

    committed.join();
    FakePserver old = cluster.get(from);
    assertThat(old.lastPushes(old.pushes()))
        .as("the moving row, planned for the gone index 2, reaches its owner at epoch 2")
        .anySatisfy(
            r -> {
              assertThat(carries(r, emb, moving)).isTrue();
              assertThat(r.getOrigin()).isEqualTo(3);
              assertThat(r.getPart()).isGreaterThanOrEqualTo(ResentParts.FIRST);
            });
    assertThat(cluster.planner.layout().routing().epoch()).isEqualTo(2);
    assertThat(cluster.traffic.droppedPushes()).isZero();
  }

  @Test
  void aUnaryPushForAnEmptiedPserverGone_goesByTheCommittedMap() throws Exception {
    pushToAnEmptiedPserverGone(false);
  }

  @Test
  void aStreamedPushForAnEmptiedPserverGone_goesByTheCommittedMap() throws Exception {
    pushToAnEmptiedPserverGone(true);
  }

  @Test
  void aPushRefusedForAMoveRolledBack_goesBackToItsServer() {
    SlotMove move = moveOfTheRow(1);
    begin(move);
    cluster.get(from).refuseMoved(k -> k.equals(emb + "#" + moving), 2, 1);
    CompletableFuture<Void> rolledBack =
        CompletableFuture.runAsync(
            () -> {
              cluster.get(from).serveAll();
              assertThat(placement.abort(placement.read())).isTrue();
            },
            CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));

    cluster.client.push(rowGradients(moving, staying), values);

    rolledBack.join();
    assertThat(added.pushes()).isZero();
    assertThat(cluster.get(from).lastPushes(1).get(0).getOrigin()).isEqualTo(from + 1);
    assertThat(cluster.get(from).applications().keySet())
        .anyMatch(k -> k.endsWith("@" + (from + 1)));
    assertThat(cluster.planner.layout().routing().epoch()).isZero();
  }

  @Test
  void aRowPullRefusedWithMoved_isResentToTheNewOwner() {
    added.installedByMove(cluster.planner.layout().specs());
    SlotMove move = moveOfTheRow(1);
    begin(move);
    cluster.get(from).refuseMoved(k -> k.equals(emb + "#" + moving), 2, 1);
    CompletableFuture<Void> committed = commitLater(move, 300);

    Parameters pulled = Parameters.zerosLike(cluster.model);
    cluster.client.pullRows(pulled, new long[] {moving, staying});

    committed.join();
    assertThat(added.pulls()).isEqualTo(1);
    assertThat(pulled.sparse(emb).contains(moving)).isTrue();
    assertThat(pulled.sparse(emb).contains(staying)).isTrue();
  }

  @Test
  void aPrefetchRefusedWithMoved_isReSplitAtOnce_notSentToTheOldOwnerAgain() {
    added.installedByMove(cluster.planner.layout().specs());
    SlotMove move = moveOfTheRow(1);
    begin(move);
    cluster.get(from).refuseMoved(k -> k.equals(emb + "#" + moving), 2, 1);
    CompletableFuture<Void> committed = commitLater(move, 200);

    List<SparseRows> rows =
        cluster
            .client
            .startRowPull(java.util.Map.of(emb, new long[] {moving, staying}))
            .await(values);

    committed.join();
    assertThat(cluster.get(from).refusedMoved()).isEqualTo(1);
    assertThat(added.pulls()).isEqualTo(1);
    assertThat(rows.stream().flatMap(r -> r.getRowIdsList().stream()))
        .containsExactlyInAnyOrder(moving, staying);
  }
}
