package dev.paramserver.bench.component;

import dev.paramserver.bench.train.CtrData;
import dev.paramserver.bench.train.SingleJvmTrainer;
import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.pserver.grpc.ParameterServerGrpcService;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import dev.paramserver.trainer.config.AgentProperties;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.GradientDtype;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.config.ModelType;
import dev.paramserver.trainer.config.OptimizerKind;
import dev.paramserver.trainer.config.OptimizerProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.config.TrainingModeSetting;
import dev.paramserver.trainer.coordination.JobLocks;
import dev.paramserver.trainer.coordination.Membership;
import dev.paramserver.trainer.coordination.PserverRegistry;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.pserver.PserverTraffic;
import dev.paramserver.trainer.pserver.ShardInitializer;
import dev.paramserver.trainer.stop.StopSignal;
import dev.paramserver.trainer.training.PserverClients;
import dev.paramserver.trainer.training.TaskTrainer;
import dev.paramserver.trainer.training.TrainingContext;
import dev.paramserver.trainer.training.TrainingProgress;
import io.grpc.ManagedChannel;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.springframework.core.env.StandardEnvironment;

/**
 * The trainer's training thread apart from the network and from contention: the real {@link
 * TaskTrainer} (row cache, prefetch, pipelined streamed pushes, as a click-through trainer runs
 * them) trains the click-through workload's records against a real pserver service ({@link
 * ParameterServerGrpcService} over a real {@link ParameterShard}) on an in-process channel with a
 * direct executor; the pserver's calls run on a thread of their own, so the training thread's CPU
 * time is the trainer's alone. Against it, one JVM's whole step ({@link SingleJvmTrainer#step}) on
 * the same batches. A pass of each, unmeasured, first; then the two interleaved over rounds. Prints
 * one {@code name.round=value} line per figure of each round (the training thread's CPU and bytes
 * allocated per batch, its share of wall time off CPU, the single JVM's CPU per batch).
 *
 * <p>Benchmark code only. Arguments: {@code rounds records}.
 */
public final class TrainerThreadBench {
  static final int BATCH = 256;
  static final float LR = 0.05f;
  static final int TASK_RECORDS = 4096;

  private TrainerThreadBench() {}

  public static void main(String[] args) throws Exception {
    int rounds = Integer.parseInt(args[0]);
    int records = Integer.parseInt(args[1]);
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    com.sun.management.ThreadMXBean allocs = (com.sun.management.ThreadMXBean) threads;
    ModelSpec spec = new ModelSpec("sparse-lr", 0, 2, List.of(), Mlp.Activation.RELU, 8);
    List<Example> examples = new CtrData(10_000_000L).examples(records, 1);
    List<List<Example>> tasks = new ArrayList<>();
    for (int at = 0; at < examples.size(); at += TASK_RECORDS) {
      tasks.add(examples.subList(at, Math.min(examples.size(), at + TASK_RECORDS)));
    }
    TrainerProperties props = properties();
    try (Harness h = new Harness(spec, props)) {
      Single single = new Single(spec, props.agent().seed());
      int epoch = 0;
      for (int round = -1; round < rounds; round++) {
        epoch++;
        long t0 = threads.getCurrentThreadCpuTime();
        int batches = single.pass(tasks, epoch);
        double singleUs = (threads.getCurrentThreadCpuTime() - t0) / 1e3 / batches;
        long w0 = System.nanoTime();
        long a0 = allocs.getCurrentThreadAllocatedBytes();
        t0 = threads.getCurrentThreadCpuTime();
        batches = h.pass(tasks, epoch);
        long cpu = threads.getCurrentThreadCpuTime() - t0;
        long allocated = allocs.getCurrentThreadAllocatedBytes() - a0;
        long wall = System.nanoTime() - w0;
        if (round >= 0) {
          print("single_us_per_batch", round, singleUs);
          print("trainer_us_per_batch", round, cpu / 1e3 / batches);
          print("trainer_off_cpu_share", round, 1 - (double) cpu / wall);
          print("trainer_alloc_bytes_per_batch", round, (double) allocated / batches);
        }
      }
    }
  }

  private static void print(String name, int round, double value) {
    System.out.println(String.format(Locale.ROOT, "%s.%d=%.4f", name, round, value));
  }

  /** The bench's click-through trainer: batch 256, SGD 0.05, pipelined, row cache defaults. */
  static TrainerProperties properties() {
    return new TrainerProperties(
        new AgentProperties("t-bench", 42, 1_000_000, false, Duration.ZERO),
        new DataProperties(List.of("unused"), List.of(), BATCH, true),
        new ModelProperties(
            ModelType.SPARSE_LR, 0, 2, List.of(), Mlp.Activation.RELU, 8, null, null, null),
        OptimizerProperties.of(OptimizerKind.SGD, LR, 0, 0),
        new CommunicationProperties(
            false,
            262144,
            GradientDtype.FLOAT32,
            true,
            null,
            4,
            Duration.ofSeconds(30),
            Duration.ofMillis(100),
            TrainingModeSetting.ASYNC,
            4,
            CommunicationProperties.SparseRowSettings.defaults()));
  }

  /** The batches TaskTrainer trains task {@code id} of epoch {@code epoch} in. */
  static List<Batch> batches(List<Example> task, long seed, int id, int epoch) {
    List<Example> copy = new ArrayList<>(task);
    Collections.shuffle(copy, new Random(seed ^ (id * 31L + epoch)));
    return new Dataset(copy, 0).batches(BATCH);
  }

  /** One JVM: the model, its parameters, its step. */
  static final class Single {
    final Model model;
    final Parameters params;
    final Parameters grads;
    final Map<String, Float> rowStddev;
    final long seed;

    Single(ModelSpec spec, long seed) {
      this.model = ModelFactory.create(spec);
      this.params = Initializers.initial(model, 42);
      this.grads = Parameters.zerosLike(model);
      this.rowStddev = SingleJvmTrainer.rowStddev(model);
      this.seed = seed;
    }

    int pass(List<List<Example>> tasks, int epoch) {
      int n = 0;
      for (int t = 0; t < tasks.size(); t++) {
        for (Batch b : batches(tasks.get(t), seed, t + 1, epoch)) {
          SingleJvmTrainer.step(model, params, grads, rowStddev, b, LR);
          n++;
        }
      }
      return n;
    }
  }

  /** A pserver service in process and a trainer wired to it as a training session wires it. */
  static final class Harness implements AutoCloseable {
    final ExecutorService pserverThread =
        Executors.newSingleThreadExecutor(r -> new Thread(r, "pserver"));
    final InProcessGrpc grpc = new InProcessGrpc();
    final PserverDirectory directory;
    final StopSignal stop = new StopSignal();
    final TaskTrainer trainer;

    Harness(ModelSpec spec, TrainerProperties props) throws Exception {
      ParameterShard shard = new ParameterShard(true);
      ShardLifecycle lifecycle = new ShardLifecycle(shard);
      lifecycle.claimed(0);
      lifecycle.serve();
      String name =
          grpc.startServer(
              b ->
                  b.executor(pserverThread)
                      .addService(
                          ServerInterceptors.intercept(
                              // the stock marshallers: in process the answers reach the trainer
                              // as objects, not serialized and parsed again (a lent answer would
                              // be read as bytes), as before answers were lent
                              new ParameterServerGrpcService(
                                  shard,
                                  lifecycle,
                                  pserverThread,
                                  new SimpleMeterRegistry(),
                                  new ShardTraffic(),
                                  new AdminAddress("127.0.0.1", new StandardEnvironment()),
                                  false),
                              new ErrorMappingInterceptor())));
      Model model = ModelFactory.create(spec);
      directory = new PserverDirectory(new OneRegistry(name), new DirectChannels());
      int count = directory.awaitAll(stop.retryUpTo(Duration.ofSeconds(10)));
      PserverClients pc =
          PserverClients.wire(
              model, props, directory, count, "bench", 0, new Locks(), stop, new PserverTraffic());
      ShardInitializer initializer = pc.initializer();
      ParameterClient client = pc.client();
      Parameters values = Initializers.initial(model, props.agent().seed());
      initializer.ensureAll(values);
      client.pull(values);
      TrainingContext ctx =
          new TrainingContext(spec, model, values, client, new Dataset(List.of(), 0), new Member());
      trainer = new TaskTrainer(ctx, props, new TrainingProgress(), stop);
    }

    /** Trains every task once, waits for every push; returns the batches trained. */
    int pass(List<List<Example>> tasks, int epoch) throws Exception {
      int n = 0;
      for (int t = 0; t < tasks.size(); t++) {
        Task task = Task.newBuilder().setId(t + 1).setEpoch(epoch).build();
        TaskTrainer.Trained done = trainer.train(task, new ArrayList<>(tasks.get(t)), 0);
        n += (int) ((done.records() + BATCH - 1) / BATCH);
      }
      trainer.settle();
      return n;
    }

    @Override
    public void close() throws Exception {
      trainer.close();
      directory.close();
      grpc.close();
      pserverThread.shutdownNow();
    }
  }

  /** One pserver, at an in-process name. */
  private record OneRegistry(String name) implements PserverRegistry {
    @Override
    public int desired() {
      return 1;
    }

    @Override
    public Map<Integer, String> addresses() {
      return Map.of(0, name);
    }

    @Override
    public Optional<String> address(int index) {
      return index == 0 ? Optional.of(name) : Optional.empty();
    }

    @Override
    public AutoCloseable watch(Listener listener) {
      listener.changed(0, name);
      return () -> {};
    }
  }

  /** In-process channels whose calls complete on the caller's (or the server's) thread. */
  private static final class DirectChannels extends ChannelFactory {
    DirectChannels() {
      super(null, List.of());
    }

    @Override
    public ManagedChannel forAddress(String name) {
      return InProcessChannelBuilder.forName(name).directExecutor().build();
    }
  }

  /** The only trainer of the job: it initialises the pserver. */
  private static final class Locks implements JobLocks {
    @Override
    public Optional<InitLock> tryInitialisation() {
      return Optional.of(
          new InitLock() {
            @Override
            public Optional<String> previousInitId() {
              return Optional.empty();
            }

            @Override
            public void done(String initId) {}

            @Override
            public void close() {}
          });
    }

    @Override
    public boolean claimExport() {
      return false;
    }

    @Override
    public boolean claimEvaluation(int pass) {
      return false;
    }
  }

  private static final class Member implements Membership {
    @Override
    public String trainerId() {
      return "t-bench";
    }

    @Override
    public String job() {
      return "bench";
    }

    @Override
    public JobLocks locks() {
      return new Locks();
    }

    @Override
    public boolean isAlive() {
      return true;
    }

    @Override
    public void onLost(Runnable listener) {}

    @Override
    public void close() {}
  }
}
