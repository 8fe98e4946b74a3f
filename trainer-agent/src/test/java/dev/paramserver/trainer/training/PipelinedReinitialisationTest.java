package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.coordination.EtcdMembership;
import dev.paramserver.trainer.testing.FakePserver;
import dev.paramserver.trainer.testing.PserverCluster;
import dev.paramserver.trainer.testing.TestProperties;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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

/**
 * A pserver that loses its state while a pipelined (streamed) push is in flight is re-initialised
 * with the values of that push while the training thread has gone on with the next batch. The
 * interleaving is fixed by the fake pserver: push 1 (batch 1's gradient) is held at the pserver
 * until the training thread is inside batch 2's pull of sparse rows (itself held); only then is the
 * pserver wiped and push 1 answered NOT_INITIALIZED. The training thread meets the failure first in
 * its row pull, and acts on the failed push stream before acting on the pull's failure. The
 * re-initialisation must carry one consistent set of values, the ones push 1's gradient was
 * computed on: batch 1's rows, exactly as pulled, and the dense values before any push was
 * answered, not whatever the training thread holds by then (its rows are being replaced by batch
 * 2's).
 */
@Timeout(60)
class PipelinedReinitialisationTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  /** Logistic regression over one dense feature and a sparse table of width 1. */
  private static final ModelSpec SPARSE =
      new ModelSpec("sparse-lr", 1, 2, List.of(), Mlp.Activation.RELU, 0);

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private Lease lease;
  private final ExecutorService trainingThread = Executors.newSingleThreadExecutor();

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    cluster = new PserverCluster(coordinator, SPARSE, 1, 2, false);
    lease = coordinator.grantLease(Duration.ofSeconds(10));
  }

  @AfterEach
  void stop() throws Exception {
    trainingThread.shutdownNow();
    assertThat(trainingThread.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    lease.close();
    cluster.close();
    coordinator.close();
  }

  /** 16 examples, each with its own two sparse ids: every batch of 4 pulls 8 rows of its own. */
  private static List<Example> examples() {
    List<Example> out = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      out.add(
          Example.newBuilder()
              .addDense(i % 2 == 0 ? -1f : 1f)
              .addSparseIds(10L * i + 1)
              .addSparseIds(10L * i + 2)
              .setLabel(i % 2)
              .build());
    }
    return out;
  }

  /** Every element of {@code rows}, keyed "table#id[k]". */
  private static Map<String, Float> elements(List<SparseRows> rows) {
    Map<String, Float> out = new TreeMap<>();
    for (SparseRows r : rows) {
      float[] data = TensorCodec.decode(r.getData(), r.getDtype());
      int width = data.length / r.getRowIdsCount();
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        for (int k = 0; k < width; k++) {
          out.put(r.getName() + "#" + r.getRowIds(i) + "[" + k + "]", data[i * width + k]);
        }
      }
    }
    return out;
  }

  @Test
  void pserverLosingItsStateDuringAPipelinedPush_isReinitialisedWithTheValuesOfThatPush()
      throws Exception {
    FakePserver ps = cluster.get(0);
    Parameters values = Initializers.initial(cluster.model, 42);
    cluster.initializer.ensureAll(values);
    cluster.client.pull(values);
    Map<String, float[]> denseBefore = new TreeMap<>();
    for (String name : values.denseNames()) {
      denseBefore.put(name, values.dense(name).clone());
    }
    int initBlocksBefore = ps.initBlocks().size();
    TrainingContext ctx =
        new TrainingContext(
            SPARSE,
            cluster.model,
            values,
            cluster.client,
            new Dataset(List.of(), 1),
            new EtcdMembership(coordinator, lease, "t-test"));
    CountDownLatch push1 = ps.holdNextPush();
    CountDownLatch rowPull2 = ps.holdRowPull(2);

    try (TaskTrainer trainer =
        new TaskTrainer(
            ctx,
            TestProperties.of("unused", null, true, null),
            new TrainingProgress(),
            cluster.stop)) {
      Task task = Task.newBuilder().setId(1).setEpoch(1).build();
      Future<TaskTrainer.Trained> trained =
          trainingThread.submit(() -> trainer.train(task, examples(), 0));
      assertThat(push1.await(20, TimeUnit.SECONDS)).as("batch 1's push arrived").isTrue();
      assertThat(rowPull2.await(20, TimeUnit.SECONDS)).as("batch 2's row pull arrived").isTrue();
      // the pserver restarts empty under push 1, which fails with NOT_INITIALIZED; the training
      // thread, whose row pull fails meanwhile, re-initialises it from push 1's values
      ps.wipe();
      ps.releasePush();
      Poll.until(Duration.ofSeconds(20), ps::initialised, "the pserver re-initialised");
      ps.releaseRowPull();
      TaskTrainer.Trained done = trained.get(20, TimeUnit.SECONDS);
      done.applied().get(20, TimeUnit.SECONDS);
      assertThat(done.records()).isEqualTo(16);
    }

    Map<String, Float> batch1Rows = elements(ps.rowPullAnswers().get(0));
    assertThat(batch1Rows).as("batch 1 pulled its 8 rows").hasSize(8);
    assertThat(elements(ps.initRows()))
        .as("the rows the re-initialisation carried: batch 1's, as pulled")
        .isEqualTo(batch1Rows);
    List<TensorBlock> reinitBlocks =
        ps.initBlocks().subList(initBlocksBefore, ps.initBlocks().size());
    assertThat(reinitBlocks).as("the re-initialisation's dense blocks").isNotEmpty();
    for (TensorBlock b : reinitBlocks) {
      float[] sent = TensorCodec.decode(b.getData(), b.getDtype());
      float[] before = denseBefore.get(b.getName());
      for (int i = 0; i < sent.length; i++) {
        assertThat(sent[i])
            .as(b.getName() + "[" + (b.getOffset() + i) + "] re-initialised")
            .isEqualTo(before[(int) b.getOffset() + i]);
      }
    }
  }
}
