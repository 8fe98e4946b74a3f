package dev.paramserver.trainer.training;

import dev.paramserver.models.Model;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.coordination.JobLocks;
import dev.paramserver.trainer.pserver.CallPolicy;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.pserver.PserverFailures;
import dev.paramserver.trainer.pserver.PserverTraffic;
import dev.paramserver.trainer.pserver.RequestPlanner;
import dev.paramserver.trainer.pserver.ShardInitializer;
import dev.paramserver.trainer.stop.StopSignal;

/**
 * The trainer's client of the pservers, wired over the model's layout: what {@link TrainingSetup}
 * builds for a session, and the benchmarks for a trainer thread over in-process pservers.
 *
 * @param initializer makes sure every pserver is initialised (one trainer initialises)
 * @param client the pushes and pulls
 */
public record PserverClients(ShardInitializer initializer, ParameterClient client) {
  /**
   * Lays {@code model} out on {@code pservers} pservers, makes {@code directory} route by the job's
   * committed placement map (and each newer one) from now on, and wires the client: its requests
   * carry {@code session} and {@code staleness}, its calls the settings' deadline and backoff until
   * {@code stop}.
   */
  public static PserverClients wire(
      Model model,
      TrainerProperties props,
      PserverDirectory directory,
      int pservers,
      String session,
      int staleness,
      JobLocks locks,
      StopSignal stop,
      PserverTraffic traffic) {
    CommunicationProperties comm = props.communication();
    ModelLayout layout =
        new ModelLayout(
            model,
            comm.blockSize(),
            OptimizerConfigs.dense(props.optimizer()),
            OptimizerConfigs.sparse(props.optimizer()),
            pservers);
    directory.follow(layout);
    RequestPlanner planner =
        new RequestPlanner(
            layout, props.id(), session, comm.gradientWireType(), comm.mode().wire(), staleness);
    CallPolicy calls = new CallPolicy(comm.rpcTimeout(), comm.maxBackoff(), stop);
    ShardInitializer initializer = new ShardInitializer(locks, directory, planner, calls);
    ParameterClient client =
        new ParameterClient(
            directory, planner, new PserverFailures(directory, initializer), calls, traffic);
    return new PserverClients(initializer, client);
  }
}
