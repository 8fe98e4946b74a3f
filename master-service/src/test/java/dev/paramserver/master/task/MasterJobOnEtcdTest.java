package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Value;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.state.EtcdJobStore;
import dev.paramserver.master.state.WonLeadership;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.TaskQueueState;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job on a real etcd. Group commit: the changes of concurrent calls share one fenced
 * transaction, each is in etcd before its call is answered, and a refused transaction fails every
 * call it held. Leasing ahead: an asynchronous trainer gets the next pass's tasks while the last
 * tasks of a pass are pending, and a master that takes over goes on from there.
 */
class MasterJobOnEtcdTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final int TRAINERS = 8;

  @TempDir Path dir;
  private WonLeadership leader;
  private CountingKv kv;
  private EtcdJobStore store;
  private ExecutorService pool;

  @BeforeEach
  void lead() throws Exception {
    leader = new WonLeadership(etcd);
    kv = new CountingKv(leader.coordinator.kv());
    store = leader.store(kv);
    pool = Executors.newFixedThreadPool(TRAINERS);
  }

  @AfterEach
  void close() {
    pool.shutdownNow();
    leader.close();
  }

  /** A serving job of 32 one-chunk tasks over {@link #store}, one pass. */
  private MasterJob job() throws Exception {
    return job(1);
  }

  private MasterJob job(int passes) throws Exception {
    Path file = MasterJobLeaseTest.dataset(dir, 32, 1);
    MasterJob job = new MasterJob(MasterJobLeaseTest.props(passes), store, Clock.systemUTC());
    job.startServing("test:1");
    job.setDataset(List.of(file.toString()), "t0");
    return job;
  }

  /**
   * Calls {@code call} for trainer t0 and, once its commit has started, for t1..t7, whose changes
   * are all made while that commit is held back: they must all go in the next transaction. Then
   * runs {@code then} and lets the first commit go on.
   */
  private <T> List<Future<T>> firstAloneThenTheRest(
      MasterJob job, Function<String, Callable<T>> call, Runnable then) throws Exception {
    CountDownLatch firstCommit = new CountDownLatch(1);
    kv.beforeCommit =
        n -> {
          if (n == 1) {
            firstCommit.countDown();
            Poll.until(
                Duration.ofSeconds(10),
                Duration.ofMillis(5),
                () -> job.status().getTasks().getPending() == TRAINERS,
                "every trainer's dispatch made in memory");
            then.run();
          }
        };
    List<Future<T>> out = new ArrayList<>();
    out.add(pool.submit(call.apply("t0")));
    assertThat(firstCommit.await(10, TimeUnit.SECONDS)).as("t0's commit started").isTrue();
    for (int i = 1; i < TRAINERS; i++) {
      out.add(pool.submit(call.apply("t" + i)));
    }
    return out;
  }

  /** Reports the task of {@code r} trained in the trainer's next GetTask, as trainers do. */
  private static GetTaskResponse finishAndAsk(
      MasterJob job, String trainer, int pass, GetTaskResponse r, int holdMs) {
    return job.getTask(
        trainer,
        pass,
        List.of(new MasterJob.Finished(r.getTask().getId(), r.getTask().getEpoch())),
        holdMs,
        1);
  }

  private MasterSnapshot inEtcd() {
    return leader.store().loadSnapshot().orElseThrow();
  }

  @Test
  void concurrentGetTasks_shareOneCommit_andEachIsInEtcdBeforeItsAnswer() throws Exception {
    MasterJob job = job();
    long commitsBefore = kv.commits.get();
    List<Future<GetTaskResponse>> answers =
        firstAloneThenTheRest(
            job,
            trainer ->
                () -> {
                  GetTaskResponse r = job.getTask(trainer, 0);
                  // answered: the dispatch must be in etcd already
                  MasterSnapshot s = inEtcd();
                  int id = (int) r.getTask().getId();
                  assertThat(s.getTasks().getStates(id)).isEqualTo(TaskQueueState.PENDING);
                  assertThat(s.getTasks().getEpochs(id)).isEqualTo(r.getTask().getEpoch());
                  assertThat(s.getTasks().getHolders(id)).isEqualTo(trainer);
                  return r;
                },
            () -> {});
    List<Long> ids = new ArrayList<>();
    for (Future<GetTaskResponse> f : answers) {
      GetTaskResponse r = f.get();
      assertThat(r.getOutcome()).isEqualTo(GetTaskResponse.Outcome.TASK);
      ids.add(r.getTask().getId());
    }
    assertThat(ids).as("every trainer got its own task").doesNotHaveDuplicates();
    assertThat(kv.commits.get() - commitsBefore)
        .as("the first dispatch alone, then the other seven in one transaction")
        .isEqualTo(2);
    assertThat(job.queueCommits()).isEqualTo(2);
    assertThat(job.queueChangesCommitted()).isEqualTo(TRAINERS);

    // a master that takes over finds every answered dispatch
    MasterJob successor = new MasterJob(MasterProperties.defaults(), store, Clock.systemUTC());
    successor.startServing("test:2");
    assertThat(successor.status().getTasks().getPending()).isEqualTo(TRAINERS);
  }

  @Test
  void concurrentReports_shareCommits_andTheirCountsSurviveAReload() throws Exception {
    MasterJob job = job();
    // every trainer trains four tasks, each report riding on its next GetTask
    List<Callable<Integer>> trainers = new ArrayList<>();
    for (int i = 0; i < TRAINERS; i++) {
      String trainer = "t" + i;
      trainers.add(
          () -> {
            int trained = 0;
            GetTaskResponse r = job.getTask(trainer, 0);
            while (r.getOutcome() == GetTaskResponse.Outcome.TASK && trained < 4) {
              trained++;
              r = finishAndAsk(job, trainer, 0, r, 0);
            }
            return trained;
          });
    }
    long commitsBefore = kv.commits.get();
    long changesBefore = job.queueChangesCommitted();
    int trained = 0;
    for (Future<Integer> f : pool.invokeAll(trainers)) {
      trained += f.get();
    }
    long commits = kv.commits.get() - commitsBefore;
    long changes = job.queueChangesCommitted() - changesBefore;
    System.out.println(
        "GROUP_COMMIT trainers="
            + TRAINERS
            + " changes="
            + changes
            + " etcd_commits="
            + commits
            + " changes_per_commit="
            + String.format("%.2f", (double) changes / commits));
    assertThat(commits).as("etcd transactions").isEqualTo(job.queueCommits());
    assertThat(commits).as("fewer transactions than changes").isLessThan(changes);

    MasterSnapshot s = inEtcd();
    long done = s.getTasks().getStatesList().stream().filter(TaskQueueState.DONE::equals).count();
    assertThat(done).as("every report answered is in etcd").isEqualTo(trained);
  }

  @Test
  void aRefusedCommit_failsEveryCallItHeld_withNotLeader() throws Exception {
    MasterJob job = job();
    AtomicBoolean refuse = new AtomicBoolean();
    kv.refuse = n -> refuse.get() && n > 1;
    List<Future<Optional<ErrorReason>>> outcomes =
        firstAloneThenTheRest(
            job,
            trainer ->
                () -> {
                  try {
                    job.getTask(trainer, 0);
                    return Optional.<ErrorReason>empty();
                  } catch (ServiceException e) {
                    return Optional.of(e.reason());
                  }
                },
            () -> refuse.set(true));
    int answered = 0;
    int refused = 0;
    for (Future<Optional<ErrorReason>> f : outcomes) {
      Optional<ErrorReason> o = f.get();
      if (o.isEmpty()) {
        answered++;
      } else {
        assertThat(o.get()).isEqualTo(ErrorReason.NOT_LEADER);
        refused++;
      }
    }
    assertThat(answered).as("the first dispatch, committed alone").isOne();
    assertThat(refused).as("the seven in the refused transaction").isEqualTo(TRAINERS - 1);
    assertThat(job.isServing()).isFalse();
    assertThat(inEtcd().getTasks().getStatesList().stream().filter(TaskQueueState.PENDING::equals))
        .as("etcd holds only the answered dispatch")
        .hasSize(1);
  }

  @Test
  void asyncTrainer_leasesTheNextPassWhileThePassEnds_andASuccessorGoesOnFromEtcd()
      throws Exception {
    MasterJob job = job(2);
    // b holds task 0 of pass 0 to the end; a, asynchronous (hold_ms > 0), trains the other 31
    GetTaskResponse slow = job.getTask("b", 0, List.of(), 0, 1);
    GetTaskResponse r = job.getTask("a", 0, List.of(), 100, 1);
    for (int i = 1; i < 32; i++) {
      assertThat(r.getTask().getPass()).isZero();
      r = finishAndAsk(job, "a", 0, r, 100);
    }
    assertThat(r.getOutcome())
        .as("a gets work instead of WAIT")
        .isEqualTo(GetTaskResponse.Outcome.TASK);
    assertThat(r.getTask().getPass()).as("a task of the next pass").isOne();
    assertThat(r.getCurrentPass()).as("pass 0 still runs: task 0 is pending").isZero();
    assertThat(job.getTask("c", 0, List.of(), 0, 1).getOutcome())
        .as("a synchronous trainer (hold_ms 0) still waits at the pass's end")
        .isEqualTo(GetTaskResponse.Outcome.WAIT);
    assertThat(job.status().getPass()).isZero();
    assertThat(job.status().getPasses(0).getRecords()).isEqualTo(31);

    // the leader goes; its successor loads the queue, with the lease ahead, from etcd
    job.stopServing();
    MasterJob successor = new MasterJob(MasterProperties.defaults(), store, Clock.systemUTC());
    successor.startServing("test:2");
    assertThat(successor.status().getPass()).isZero();
    assertThat(successor.status().getTasks().getPending()).isOne();
    assertThat(successor.status().getPasses(1).getTasks().getPending()).isOne();
    assertThat(successor.taskFinished("b", slow.getTask().getId(), slow.getTask().getEpoch()))
        .isTrue();
    JobStatus afterPass0 = successor.status();
    assertThat(afterPass0.getPass()).as("pass 0 ended with its last task").isOne();
    assertThat(afterPass0.getPasses(0).getRecords()).isEqualTo(32);
    assertThat(afterPass0.getPasses(0).getTasks().getDone()).isEqualTo(32);
    assertThat(afterPass0.getPasses(0).getEndedMs()).isNotZero();
    assertThat(successor.getTask("b", 0, List.of(), 100, 1).getOutcome())
        .isEqualTo(GetTaskResponse.Outcome.PASS_FINISHED);

    // the rest of pass 1, the last; a's task leased ahead is reported to the successor
    Set<Long> pass1 = new HashSet<>(List.of(r.getTask().getId()));
    assertThat(successor.taskFinished("a", r.getTask().getId(), r.getTask().getEpoch())).isTrue();
    GetTaskResponse n = successor.getTask("a", 1, List.of(), 100, 1);
    while (n.getOutcome() == GetTaskResponse.Outcome.TASK) {
      assertThat(n.getTask().getPass()).isOne();
      pass1.add(n.getTask().getId());
      n = finishAndAsk(successor, "a", 1, n, 100);
    }
    assertThat(n.getOutcome()).isEqualTo(GetTaskResponse.Outcome.JOB_FINISHED);
    assertThat(pass1).hasSize(32);
    JobStatus end = successor.status();
    assertThat(end.getState()).isEqualTo(JobState.FINISHED);
    assertThat(end.getPassesCount()).as("no pass past the last").isEqualTo(2);
    assertThat(end.getPasses(1).getRecords()).isEqualTo(32);
    assertThat(end.getPasses(1).getTasks().getDone()).isEqualTo(32);
  }

  /** Counts the fenced transactions; can hold one back or refuse it. */
  private static final class CountingKv implements KeyValueStore {
    private final KeyValueStore kv;
    final AtomicInteger commits = new AtomicInteger();
    private final AtomicInteger calls = new AtomicInteger();
    volatile Consumer<Integer> beforeCommit = n -> {};
    volatile IntPredicate refuse = n -> false;

    CountingKv(KeyValueStore kv) {
      this.kv = kv;
    }

    @Override
    public boolean commitIfHeld(
        String fenceKey, long fenceCreateRevision, Map<String, byte[]> puts, List<String> deletes) {
      boolean snapshot = puts.keySet().stream().anyMatch(k -> k.contains("master/state/"));
      if (!snapshot) {
        return kv.commitIfHeld(fenceKey, fenceCreateRevision, puts, deletes);
      }
      // counted from the first snapshot after the job started
      int n = calls.getAndIncrement();
      beforeCommit.accept(n);
      if (refuse.test(n)) {
        return false;
      }
      commits.incrementAndGet();
      return kv.commitIfHeld(fenceKey, fenceCreateRevision, puts, deletes);
    }

    @Override
    public Optional<KeyValue> get(String key) {
      return kv.get(key);
    }

    @Override
    public List<KeyValue> getPrefix(String prefix) {
      return kv.getPrefix(prefix);
    }

    @Override
    public long put(String key, byte[] value) {
      return kv.put(key, value);
    }

    @Override
    public long put(String key, byte[] value, Lease lease) {
      return kv.put(key, value, lease);
    }

    @Override
    public boolean putIfAbsent(String key, byte[] value, Lease lease) {
      return kv.putIfAbsent(key, value, lease);
    }

    @Override
    public boolean compareAndSwap(String key, long expectedModRevision, byte[] value) {
      return kv.compareAndSwap(key, expectedModRevision, value);
    }

    @Override
    public void delete(String key) {
      kv.delete(key);
    }

    @Override
    public AutoCloseable watchPrefix(String prefix, Consumer<WatchEvent> listener) {
      return kv.watchPrefix(prefix, listener);
    }
  }

  @Test
  void aMasterThatTakesOver_hasTheHyperparameters_andHearsTheRecordsTrainedBeforeAnyReport()
      throws Exception {
    Path file = MasterJobLeaseTest.dataset(dir, 32, 1);
    MasterJob job = new MasterJob(MasterJobLeaseTest.props(1), store, Clock.systemUTC());
    job.startServing("test:1");
    job.setDataset(
        List.of(file.toString()),
        "t0",
        Map.of("optimizer", Value.newBuilder().setStringValue("adam").build()));
    long trained = 0;
    for (int i = 0; i < 3; i++) {
      GetTaskResponse r = job.getTask("t0", 0);
      assertThat(job.taskFinished("t0", r.getTask().getId(), r.getTask().getEpoch())).isTrue();
      trained += r.getTask().getChunksList().stream().mapToLong(c -> c.getRecords()).sum();
    }

    MasterJob successor = new MasterJob(MasterProperties.defaults(), store, Clock.systemUTC());
    List<Long> rebased = new ArrayList<>();
    successor.setLossTracking(10, windows -> {}, rebased::add);
    successor.startServing("test:2");
    assertThat(trained).isPositive();
    assertThat(rebased).containsExactly(trained);
    assertThat(successor.hyperparameters().get("optimizer").getStringValue()).isEqualTo("adam");
    assertThat(successor.getTask("t0", 0).getLossEveryRecords()).isEqualTo(10);
  }
}
