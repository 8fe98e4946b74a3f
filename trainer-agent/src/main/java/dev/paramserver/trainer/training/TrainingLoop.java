package dev.paramserver.trainer.training;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.Lease;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.ReportEvaluationRequest;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.trainer.TrainerStoppedException;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.master.MasterClient;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.pserver.ShardInitializer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trainer's main loop: register, wait for the pservers, initialise them (one trainer does),
 * then GetTask → read the task's chunks → mini-batches → forward/backward → push → pull →
 * TaskFinished, pass after pass; evaluate at the end of each pass and report to the master; write
 * the final model if elected. A stop request finishes the current batch, hands the task back and
 * leaves.
 */
public final class TrainingLoop {
  private static final Logger log = LoggerFactory.getLogger(TrainingLoop.class);

  private final TrainerProperties props;
  private final Coordinator coordinator;
  private final Duration leaseTtl;
  private final String endpoint;
  private final String job;
  private final IntConsumer onExit;
  private final TrainerMetrics metrics;
  private final ChannelFactory channels;
  private final TrainingProgress progress = new TrainingProgress();
  private final AtomicBoolean stopping = new AtomicBoolean();
  private volatile Thread thread;
  private volatile ParameterClient params;

  /**
   * @param endpoint this trainer's host:httpPort, published under {@code trainers/<id>}
   * @param onExit called with the exit code when the loop ends on its own (job finished or failed)
   */
  public TrainingLoop(
      TrainerProperties props,
      Coordinator coordinator,
      Duration leaseTtl,
      String endpoint,
      IntConsumer onExit,
      io.micrometer.core.instrument.MeterRegistry registry,
      ChannelFactory channels) {
    this.channels = channels;
    this.props = props;
    this.coordinator = coordinator;
    this.leaseTtl = leaseTtl;
    this.endpoint = endpoint;
    this.job = coordinator.keys().job();
    this.onExit = onExit;
    this.metrics = new TrainerMetrics(registry, progress);
  }

  public TrainingProgress progress() {
    return progress;
  }

  public ParameterClient parameterClient() {
    return params;
  }

  public synchronized void start() {
    if (thread != null) {
      return;
    }
    thread = new Thread(this::runAndExit, "trainer-loop");
    thread.start();
  }

  /** Asks the loop to stop after the current batch and waits up to {@code timeout}. */
  public void stop(Duration timeout) {
    stopping.set(true);
    Thread t = thread;
    if (t == null) {
      return;
    }
    try {
      t.join(timeout.toMillis());
      if (t.isAlive()) {
        log.warn("training loop did not stop within {}; interrupting it", timeout);
        t.interrupt();
        t.join(2000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  public boolean isRunning() {
    Thread t = thread;
    return t != null && t.isAlive();
  }

  private void runAndExit() {
    int code;
    try {
      code = run();
    } catch (TrainerStoppedException e) {
      log.info("training loop stopped: {}", e.getMessage());
      progress.state = TrainerState.STOPPED;
      return;
    } catch (RuntimeException | IOException e) {
      log.error("training failed", e);
      progress.failure = e.getMessage();
      progress.state = TrainerState.FAILED;
      code = 1;
    }
    if (!stopping.get()) {
      onExit.accept(code);
    }
  }

  private int run() throws IOException {
    Lease lease = coordinator.grantLease(leaseTtl);
    try (lease;
        PserverDirectory directory = new PserverDirectory(coordinator, stopping::get, channels);
        MasterClient master =
            new MasterClient(
                coordinator, props.rpcTimeout(), props.maxBackoff(), stopping::get, channels)) {
      coordinator
          .kv()
          .put(
              coordinator.keys().trainer(props.id()),
              endpoint.getBytes(StandardCharsets.UTF_8),
              lease);
      lease.onLost(
          () -> log.error("trainer lease lost: etcd unreachable for longer than {}", leaseTtl));

      List<Example> test =
          props.testData().isEmpty() ? List.of() : Dataset.readGlobs(absolute(props.testData()));
      ModelSpec spec = modelSpec(test);
      Model model = ModelFactory.create(spec);
      log.info(
          "trainer {}: model {} with {} features, {} classes, optimizer {} lr {}",
          props.id(),
          spec.type(),
          spec.features(),
          spec.classes(),
          props.optimizer(),
          props.learningRate());

      progress.state = TrainerState.WAITING_FOR_PSERVERS;
      int pservers = directory.awaitAll(props.maxBackoff());
      ModelLayout layout =
          new ModelLayout(model, props.blockSize(), OptimizerConfigs.from(props), pservers);
      ShardInitializer initializer =
          new ShardInitializer(
              coordinator,
              directory,
              lease,
              props.id(),
              props.rpcTimeout(),
              props.maxBackoff(),
              props.sync() ? TrainingMode.SYNC : TrainingMode.ASYNC,
              stopping::get);
      initializer.setLayout(layout);
      ParameterClient client =
          new ParameterClient(
              directory,
              layout,
              initializer,
              props.id(),
              props.rpcTimeout(),
              props.maxBackoff(),
              props.gradientWireType(),
              props.sync(),
              stopping::get);
      this.params = client;
      metrics.counter(
          "paramserver.trainer.bytes.pushed",
          "Gradient bytes sent to pservers",
          client,
          ParameterClient::bytesPushed);
      metrics.counter(
          "paramserver.trainer.bytes.pulled",
          "Parameter bytes received from pservers",
          client,
          ParameterClient::bytesPulled);
      metrics.counter(
          "paramserver.trainer.dropped.pushes",
          "Gradient pushes lost to a failed pserver call",
          client,
          ParameterClient::droppedPushes);

      progress.state = TrainerState.INITIALISING;
      Parameters values = Initializers.initial(model, props.seed());
      initializer.ensureAll(values);
      client.pull(values);

      SetDatasetResponse ds =
          master.call(
              "SetDataset",
              stub ->
                  stub.setDataset(
                      SetDatasetRequest.newBuilder()
                          .addAllGlobs(absolute(props.requireTrainData()))
                          .setTrainerId(props.id())
                          .build()));
      log.info(
          "dataset: {} files, {} chunks, {} tasks, {} records, {} passes{}",
          ds.getFiles(),
          ds.getChunks(),
          ds.getTasks(),
          ds.getRecords(),
          ds.getPasses(),
          ds.getAlreadySet() ? " (set before)" : "");

      Dataset testSet = new Dataset(new ArrayList<>(test), spec.features());
      return trainPasses(master, client, model, spec, values, testSet, lease);
    }
  }

  private int trainPasses(
      MasterClient master,
      ParameterClient client,
      Model model,
      ModelSpec spec,
      Parameters values,
      Dataset testSet,
      Lease lease)
      throws IOException {
    TaskTrainer trainer =
        new TaskTrainer(
            model,
            spec.features(),
            client,
            values,
            progress,
            metrics,
            props.batchSize(),
            props.accumulate(),
            props.logEvery(),
            props.seed(),
            props.pipeline() && !props.sync());
    int pass = 0;
    Parameters idleGrads = Parameters.zerosLike(model);
    progress.state = TrainerState.TRAINING;
    try (TaskSource tasks = new TaskSource(master, props.id(), props.prefetch());
        trainer) {
      while (true) {
        if (stopping.get()) {
          throw new TrainerStoppedException("before asking for a task");
        }
        TaskSource.Fetched next = tasks.next(pass);
        GetTaskResponse resp = next.response();
        switch (resp.getOutcome()) {
          case TASK -> {
            Task task = next.task();
            progress.taskId = task.getId();
            progress.pass = task.getPass();
            if (next.readError() != null) {
              log.error("task {} cannot be read: {}", task.getId(), next.readError().getMessage());
              reportFailed(master, task, next.readError().getMessage(), false);
              continue;
            }
            tasks.prefetch(pass);
            long trained = trainer.train(task, new ArrayList<>(next.examples()), stopping::get);
            if (trained < 0) {
              log.info("stopping: handing task {} back to the master", task.getId());
              reportFailed(master, task, "trainer " + props.id() + " is shutting down", true);
              TaskSource.Fetched prefetched = tasks.takePrefetched();
              if (prefetched != null && prefetched.isTask()) {
                reportFailed(
                    master, prefetched.task(), "trainer " + props.id() + " is shutting down", true);
              }
              throw new TrainerStoppedException("training task " + task.getId());
            }
            master.call(
                "TaskFinished",
                stub ->
                    stub.taskFinished(
                        TaskFinishedRequest.newBuilder()
                            .setTrainerId(props.id())
                            .setTaskId(task.getId())
                            .setEpoch(task.getEpoch())
                            .setRecords(trained)
                            .build()));
            progress.tasksDone++;
            metrics.taskFinished();
          }
          case WAIT, PASS_NOT_STARTED -> {
            if (props.sync()) {
              // an idle trainer still takes part in each synchronous step, with an empty push
              idleGrads.clear();
              client.push(idleGrads, 0, values);
              client.pull(values);
              sleep(Math.min(50, Math.max(5, resp.getRetryAfterMs())));
            } else {
              sleep(Math.max(50, resp.getRetryAfterMs()));
            }
          }
          case PASS_FINISHED -> {
            evaluateAndReport(master, client, model, values, testSet, pass);
            pass = resp.getCurrentPass();
            progress.state = TrainerState.TRAINING;
          }
          case JOB_FINISHED -> {
            int last = Math.max(0, resp.getTotalPasses() - 1);
            // the model file is written before this trainer's final report, so whoever waits for
            // the reports finds it
            exportIfElected(client, model, spec, values, lease);
            evaluateAndReport(master, client, model, values, testSet, last);
            progress.state = TrainerState.FINISHED;
            log.info("job finished: {} tasks trained by this trainer", progress.tasksDone);
            return 0;
          }
          case JOB_FAILED -> {
            progress.failure = resp.getReason();
            progress.state = TrainerState.FAILED;
            log.error("the job failed: {}", resp.getReason());
            return 3;
          }
          default ->
              throw new IllegalStateException("master answered GetTask with " + resp.getOutcome());
        }
      }
    }
  }

  private void reportFailed(MasterClient master, Task task, String reason, boolean handBack) {
    metrics.taskFailed(handBack);
    master.call(
        "TaskFailed",
        stub ->
            stub.taskFailed(
                TaskFailedRequest.newBuilder()
                    .setTrainerId(props.id())
                    .setTaskId(task.getId())
                    .setEpoch(task.getEpoch())
                    .setReason(reason == null ? "" : reason)
                    .setHandedBack(handBack)
                    .build()));
  }

  private void evaluateAndReport(
      MasterClient master,
      ParameterClient client,
      Model model,
      Parameters values,
      Dataset testSet,
      int pass) {
    if (testSet.size() == 0) {
      return;
    }
    progress.state = TrainerState.EVALUATING;
    client.pull(values);
    Evaluation e =
        Evaluation.of(
            model,
            values,
            testSet,
            1024,
            b -> {
              if (!values.sparseNames().isEmpty()) {
                for (String t : values.sparseNames()) {
                  values.sparse(t).rows().clear();
                }
                client.pullRows(values, b.sparseIds());
              }
            });
    metrics.evaluation(e.loss(), e.accuracy());
    log.info(
        String.format(
            Locale.ROOT,
            "pass %d evaluation: loss %.4f accuracy %.4f on %d test examples",
            pass,
            e.loss(),
            e.accuracy(),
            e.samples()));
    master.call(
        "ReportEvaluation",
        stub ->
            stub.reportEvaluation(
                ReportEvaluationRequest.newBuilder()
                    .setTrainerId(props.id())
                    .setPass(pass)
                    .setLoss(e.loss())
                    .setAccuracy(e.accuracy())
                    .setSamples(e.samples())
                    .setAuc(Double.isNaN(e.auc()) ? 0 : e.auc())
                    .build()));
  }

  private void exportIfElected(
      ParameterClient client, Model model, ModelSpec spec, Parameters values, Lease lease)
      throws IOException {
    Path out = props.modelOutput();
    if (out == null) {
      return;
    }
    boolean elected =
        coordinator
            .kv()
            .putIfAbsent(
                coordinator.keys().exportLock(),
                props.id().getBytes(StandardCharsets.UTF_8),
                lease);
    if (!elected) {
      log.info("another trainer writes the final model");
      return;
    }
    client.pull(values);
    if (!values.sparseNames().isEmpty()) {
      // rows exist only for ids seen in the data: collect them and pull every one
      java.util.Set<Long> ids = new java.util.TreeSet<>();
      List<String> globs = new ArrayList<>(absolute(props.requireTrainData()));
      globs.addAll(absolute(props.testData()));
      for (Example e : Dataset.readGlobs(globs)) {
        ids.addAll(e.getSparseIdsList());
      }
      long[] all = ids.stream().mapToLong(Long::longValue).toArray();
      for (int i = 0; i < all.length; i += 50_000) {
        client.pullRows(
            values, java.util.Arrays.copyOfRange(all, i, Math.min(all.length, i + 50_000)));
      }
    }
    ModelFiles.write(out, spec, model, values, job);
    log.info("wrote the final model to {}", out.toAbsolutePath());
  }

  private ModelSpec modelSpec(List<Example> test) throws IOException {
    int features = props.features();
    int classes = props.classes();
    if (features == 0 || classes == 0) {
      List<Example> sample = test;
      if (sample.isEmpty()) {
        List<Path> files = RecordIndex.expandGlobs(absolute(props.requireTrainData()));
        sample = Dataset.readChunks(RecordIndex.scan(files.get(0)));
      }
      if (features == 0) {
        features = Dataset.featuresOf(sample);
      }
      if (classes == 0) {
        classes = Dataset.classesOf(sample);
      }
    }
    return new ModelSpec(
        props.model(),
        features,
        classes,
        props.hidden(),
        Mlp.Activation.valueOf(props.activation().toUpperCase(Locale.ROOT)),
        props.embeddingWidth());
  }

  /** Relative globs are taken from this process's working directory. */
  static List<String> absolute(List<String> globs) {
    List<String> out = new ArrayList<>();
    for (String g : globs) {
      out.add(g.startsWith("/") ? g : Path.of("").toAbsolutePath().resolve(g).toString());
    }
    return out;
  }

  private void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TrainerStoppedException("waiting for a task");
    }
  }
}
