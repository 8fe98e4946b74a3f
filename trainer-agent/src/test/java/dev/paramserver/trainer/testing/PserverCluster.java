package dev.paramserver.trainer.testing;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.Lease;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.trainer.coordination.EtcdMembership;
import dev.paramserver.trainer.coordination.EtcdPserverRegistry;
import dev.paramserver.trainer.pserver.CallPolicy;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.pserver.PserverFailures;
import dev.paramserver.trainer.pserver.PserverTraffic;
import dev.paramserver.trainer.pserver.RequestPlanner;
import dev.paramserver.trainer.pserver.ShardInitializer;
import dev.paramserver.trainer.stop.StopSignal;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Fake pservers registered in a real etcd under a job, and the trainer's pserver client wired over
 * them exactly as a training session wires it (in-process channels, short deadlines and backoff).
 */
public final class PserverCluster implements AutoCloseable {
  public static final float LEARNING_RATE = 0.5f;

  public final List<FakePserver> pservers = new ArrayList<>();
  public final StopSignal stop = new StopSignal();
  public final PserverTraffic traffic = new PserverTraffic();
  public final Model model;
  public final PserverDirectory directory;
  public final RequestPlanner planner;
  public final ShardInitializer initializer;
  public final ParameterClient client;
  private final Lease lease;

  public PserverCluster(Coordinator coordinator, int n, int blockSize, boolean sync)
      throws IOException {
    this(coordinator, TestData.SPEC, n, blockSize, sync);
  }

  /** Fake pservers for a model of shape {@code spec}. */
  public PserverCluster(Coordinator coordinator, ModelSpec spec, int n, int blockSize, boolean sync)
      throws IOException {
    model = ModelFactory.create(spec);
    coordinator.kv().put(coordinator.keys().psDesired(), Integer.toString(n).getBytes(UTF_8));
    for (int i = 0; i < n; i++) {
      FakePserver ps = new FakePserver(LEARNING_RATE);
      pservers.add(ps);
      coordinator.kv().put(coordinator.keys().ps(i), ps.address().getBytes(UTF_8));
    }
    lease = coordinator.grantLease(Duration.ofSeconds(10));
    directory = new PserverDirectory(new EtcdPserverRegistry(coordinator), new InProcessChannels());
    int count = directory.awaitAll(stop.retryUpTo(Duration.ofMillis(100)));
    OptimizerConfig sgd =
        OptimizerConfig.newBuilder()
            .setKind(OptimizerConfig.Kind.SGD)
            .setLearningRate(LEARNING_RATE)
            .build();
    ModelLayout layout = new ModelLayout(model, blockSize, sgd, count);
    // as a training session: routes by the job's committed placement map from now on
    directory.follow(layout);
    planner = new RequestPlanner(layout, "t-test", DataType.FLOAT32, sync);
    CallPolicy calls = new CallPolicy(Duration.ofSeconds(5), Duration.ofMillis(50), stop);
    initializer =
        new ShardInitializer(
            new EtcdMembership(coordinator, lease, "t-test"), directory, planner, calls);
    client =
        new ParameterClient(
            directory, planner, new PserverFailures(directory, initializer), calls, traffic);
  }

  public FakePserver get(int i) {
    return pservers.get(i);
  }

  @Override
  public void close() throws InterruptedException {
    directory.close();
    lease.close();
    for (FakePserver ps : pservers) {
      ps.close();
    }
  }
}
