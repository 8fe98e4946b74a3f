package dev.paramserver.trainer.training;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Parameters;
import dev.paramserver.onnx.proto.ModelProto;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.config.AgentProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.coordination.EtcdMasterLocator;
import dev.paramserver.trainer.coordination.EtcdMembership;
import dev.paramserver.trainer.master.MasterClient;
import dev.paramserver.trainer.master.MasterReports;
import dev.paramserver.trainer.testing.FakeMaster;
import dev.paramserver.trainer.testing.InProcessChannels;
import dev.paramserver.trainer.testing.PserverCluster;
import dev.paramserver.trainer.testing.TestData;
import dev.paramserver.trainer.testing.TestProperties;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pass runner, task trainer, evaluator and exporter over in-process gRPC against a fake master
 * and fake pservers (real etcd): a whole job, and a shutdown in the middle of a push.
 */
@Timeout(60)
class PassRunnerTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  @TempDir Path dir;

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private FakeMaster master;
  private MasterClient masterClient;
  private Lease lease;
  private final TrainingProgress progress = new TrainingProgress();
  private List<ChunkInfo> chunks;

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    cluster = new PserverCluster(coordinator, 2, 2, false);
    master = new FakeMaster();
    coordinator.kv().put(coordinator.keys().masterAddr(), master.address().getBytes(UTF_8));
    masterClient =
        new MasterClient(
            new EtcdMasterLocator(coordinator),
            Duration.ofSeconds(5),
            cluster.stop.retryUpTo(Duration.ofMillis(50)),
            new InProcessChannels());
    lease = coordinator.grantLease(Duration.ofSeconds(10));
    chunks = TestData.write(dir.resolve("train.recordio"), 80, 20);
    TestData.write(dir.resolve("test.recordio"), 20, 20);
  }

  @AfterEach
  void stop() throws Exception {
    masterClient.close();
    master.close();
    lease.close();
    cluster.close();
    coordinator.close();
  }

  private PassRunner runner(TrainerProperties props) {
    MasterReports reports = new MasterReports(masterClient, props.id());
    return new PassRunner(
        props,
        reports,
        new Evaluator(reports, progress),
        new ModelExporter(props),
        progress,
        cluster.stop);
  }

  private TrainingContext context(TrainerProperties props) throws Exception {
    Parameters values = Initializers.initial(cluster.model, 42);
    cluster.initializer.ensureAll(values);
    cluster.client.pull(values);
    List<String> test = ModelSpecs.absolute(props.data().testData());
    Dataset testSet =
        new Dataset(
            test.isEmpty() ? new ArrayList<>() : new ArrayList<>(Dataset.readGlobs(test)),
            TestData.SPEC.features());
    progress.moveTo(TrainerState.WAITING_FOR_PSERVERS);
    progress.moveTo(TrainerState.INITIALISING);
    return new TrainingContext(
        TestData.SPEC,
        cluster.model,
        values,
        cluster.client,
        testSet,
        new EtcdMembership(coordinator, lease, props.id()));
  }

  @Test
  void run_trainsEveryTask_evaluatesEachPass_writesTheModel_andFinishes() throws Exception {
    Path out = dir.resolve("model.bin");
    Path onnx = dir.resolve("model.onnx");
    TrainerProperties props =
        TestProperties.of(
            dir.resolve("train.recordio").toString(),
            dir.resolve("test.recordio").toString(),
            true,
            out,
            onnx);
    master.addTask(1, chunks.subList(0, 2));
    master.addTask(2, chunks.subList(2, 4));
    master.lossEveryRecords = 16;

    int code = runner(props).run(context(props));

    assertThat(code).isZero();
    assertThat(progress.state()).isEqualTo(TrainerState.FINISHED);
    assertThat(master.datasets).hasSize(1);
    // the hyperparameters go with SetDataset, named as the properties
    var hp = master.datasets.peek().getHyperparametersMap();
    assertThat(hp.get("model").getStringValue()).isEqualTo("softmax");
    assertThat(hp.get("optimizer").getStringValue()).isEqualTo("sgd");
    assertThat(hp.get("learning-rate").getNumberValue()).isEqualTo(0.5);
    assertThat(hp.get("batch-size").getNumberValue()).isEqualTo(4.0);
    assertThat(hp.get("mode").getStringValue()).isEqualTo("async");
    assertThat(master.finished).extracting(r -> r.getTaskId()).containsExactlyInAnyOrder(1L, 2L);
    assertThat(master.finished).allSatisfy(r -> assertThat(r.getRecords()).isEqualTo(40));
    // each task's loss in windows of at least 16 records (batches of 4), the last one shorter
    assertThat(master.finished)
        .allSatisfy(
            r -> {
              assertThat(r.getLossList())
                  .extracting(w -> w.getRecords())
                  .containsExactly(16L, 16L, 8L);
              assertThat(r.getLossList()).extracting(w -> w.getBatches()).containsExactly(4, 4, 2);
              assertThat(r.getLossList())
                  .allSatisfy(
                      w -> {
                        assertThat(w.getLossSum()).isPositive().isFinite();
                        assertThat(w.getEndedMs()).isPositive();
                      });
            });
    assertThat(progress.samples()).isEqualTo(80);
    assertThat(progress.tasksDone()).isEqualTo(2);
    // evaluated at the end of the pass and at the end of the job; separable data is learnt
    assertThat(master.evaluations).hasSize(2);
    assertThat(master.evaluations).allSatisfy(e -> assertThat(e.getAccuracy()).isGreaterThan(0.9));
    assertThat(progress.evalAccuracy()).isGreaterThan(0.9);
    assertThat(Files.size(out)).isPositive();
    ModelProto exported = ModelProto.parseFrom(Files.readAllBytes(onnx));
    assertThat(exported.getGraph().getNodeList()).extracting(n -> n.getOpType()).contains("Gemm");
    assertThat(exported.getGraph().getOutputList())
        .extracting(o -> o.getName())
        .containsExactly("probabilities", "predicted");
    // every batch pushed: one by one, or summed with others held while a push was in flight
    assertThat(cluster.get(0).pushes() + cluster.get(1).pushes()).isGreaterThanOrEqualTo(4);
  }

  @Test
  void eachPass_isEvaluatedByOneTrainer_inTheBackground_theLastOnTheTrainingThread()
      throws Exception {
    TrainerProperties props =
        TestProperties.of(
            dir.resolve("train.recordio").toString(),
            dir.resolve("test.recordio").toString(),
            true,
            null);
    TrainingContext ctx = context(props);
    MasterReports reports = new MasterReports(masterClient, props.id());
    CountDownLatch evaluating = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<String> threads = new java.util.concurrent.CopyOnWriteArrayList<>();
    Evaluator held =
        new Evaluator(reports, progress) {
          @Override
          void evaluate(TrainingContext c, Parameters values, int pass) {
            threads.add(Thread.currentThread().getName());
            if (pass == 0) {
              evaluating.countDown();
              try {
                release.await(20, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
            super.evaluate(c, values, pass);
          }
        };
    TrainerProperties other = withId(props, "t-other");
    Evaluator otherEvaluator = new Evaluator(new MasterReports(masterClient, "t-other"), progress);
    TrainingContext otherCtx =
        new TrainingContext(
            ctx.spec(),
            ctx.model(),
            ctx.values(),
            ctx.client(),
            ctx.testSet(),
            new EtcdMembership(coordinator, lease, other.id()));
    try (PassEvaluations mine = new PassEvaluations(held, ctx, cluster.stop);
        PassEvaluations theirs = new PassEvaluations(otherEvaluator, otherCtx, cluster.stop)) {
      // the training thread goes on while pass 0 is evaluated
      mine.passEnded(0);
      assertThat(evaluating.await(20, TimeUnit.SECONDS)).as("pass 0 evaluation started").isTrue();
      theirs.passEnded(0); // the other trainer is not elected for pass 0
      release.countDown();
      theirs.jobFinished(1); // the other trainer sees the job end first: it evaluates pass 1
      mine.jobFinished(1);
    }
    assertThat(threads).containsExactly("evaluator");
    assertThat(master.evaluations)
        .extracting(e -> e.getPass() + "/" + e.getTrainerId())
        .containsExactlyInAnyOrder("0/t-test", "1/t-other");
    assertThat(coordinator.kv().get(coordinator.keys().evaluator(0)).map(kv -> kv.valueAsString()))
        .contains("t-test");
    // a restarted trainer of the same id still holds its election
    assertThat(held.elected(ctx, 0)).isTrue();
    assertThat(otherEvaluator.elected(otherCtx, 0)).isFalse();
  }

  private static TrainerProperties withId(TrainerProperties p, String id) {
    AgentProperties a = p.agent();
    return new TrainerProperties(
        new AgentProperties(id, a.seed(), a.logEvery(), a.exitWhenDone(), a.exitLinger()),
        p.data(),
        p.model(),
        p.optimizer(),
        p.communication());
  }

  @Test
  void unreadableTask_isReportedFailed_andTheJobGoesOn() throws Exception {
    TrainerProperties props =
        TestProperties.of(dir.resolve("train.recordio").toString(), null, true, null);
    master.addTask(1, List.of(new ChunkInfo(dir.resolve("missing.recordio"), 0, 1000, 10)));
    master.addTask(2, chunks.subList(0, 1));

    assertThat(runner(props).run(context(props))).isZero();

    assertThat(master.failed).hasSize(1);
    assertThat(master.failed.peek().getTaskId()).isEqualTo(1);
    assertThat(master.failed.peek().getHandedBack()).isFalse();
    assertThat(master.failed.peek().getReason()).contains("missing.recordio");
    assertThat(master.finished).extracting(r -> r.getTaskId()).containsExactly(2L);
    assertThat(progress.tasksFailed()).isEqualTo(1);
    assertThat(master.evaluations).isEmpty();
  }

  @Test
  void shutdownMidPush_finishesTheBatch_handsTheTaskBack_andStops() throws Exception {
    TrainerProperties props =
        TestProperties.of(dir.resolve("train.recordio").toString(), null, false, null);
    master.addTask(1, chunks);
    TrainingContext ctx = context(props);
    CountDownLatch pushing = cluster.get(0).holdNextPush();
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try {
      Future<Integer> run = thread.submit(() -> runner(props).run(ctx));
      assertThat(pushing.await(20, TimeUnit.SECONDS)).as("a push reached the pserver").isTrue();
      cluster.stop.request();
      progress.moveTo(TrainerState.STOPPING);
      cluster.get(0).releasePush();

      assertThatThrownBy(() -> run.get(20, TimeUnit.SECONDS))
          .hasCauseInstanceOf(StoppedException.class);
    } finally {
      thread.shutdownNow();
    }
    assertThat(master.failed).hasSize(1);
    assertThat(master.failed.peek().getTaskId()).isEqualTo(1);
    assertThat(master.failed.peek().getHandedBack()).isTrue();
    assertThat(master.finished).isEmpty();
    assertThat(progress.tasksHandedBack()).isEqualTo(1);
    // the batch in flight was pushed once and nothing after it
    assertThat(cluster.get(0).pushes()).isEqualTo(1);
    assertThat(progress.batches()).isEqualTo(1);
  }
}
