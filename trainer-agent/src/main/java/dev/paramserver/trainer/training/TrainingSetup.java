package dev.paramserver.trainer.training;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.Standardization;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.coordination.Membership;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.pserver.PserverTraffic;
import dev.paramserver.trainer.pserver.ShardInitializer;
import dev.paramserver.trainer.stop.StopSignal;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Prepares a training session: builds the model (sizes read from the data when unset), joins the
 * job with it (the master checks it against the job's in master mode), waits for the pservers,
 * wires the pserver client over the model's layout, makes sure every pserver is initialised (one
 * trainer does it) and pulls the current values.
 */
@Component
public class TrainingSetup {
  private static final Logger log = LoggerFactory.getLogger(TrainingSetup.class);

  private final TrainerProperties props;
  private final TrainerRegistration registration;
  private final PserverDirectory directory;
  private final PserverTraffic traffic;
  private final TrainingProgress progress;
  private final StopSignal stop;
  private final Storage storage;

  public TrainingSetup(
      TrainerProperties props,
      TrainerRegistration registration,
      PserverDirectory directory,
      PserverTraffic traffic,
      TrainingProgress progress,
      StopSignal stop,
      Storage storage) {
    this.storage = storage;
    this.props = props;
    this.registration = registration;
    this.directory = directory;
    this.traffic = traffic;
    this.progress = progress;
    this.stop = stop;
  }

  /**
   * Builds the model, joins the job with it and readies the pservers. The context holds the
   * membership, which the caller closes; on failure it is closed here.
   */
  TrainingContext prepare() throws IOException {
    List<String> testGlobs = props.data().testData();
    List<Example> test =
        testGlobs.isEmpty()
            ? List.of()
            : Dataset.readGlobs(storage, ModelSpecs.absolute(testGlobs));
    DatasetInfo data = TrainingData.find(props.data(), storage);
    ModelSpec spec = ModelSpecs.of(props.model(), props.data(), test, storage);
    if (props.model().classes() == 0 && data.getLabelNamesCount() > spec.classes()) {
      // named classes: count them all, even those the sampled records lack
      spec =
          new ModelSpec(
              spec.type(),
              spec.features(),
              data.getLabelNamesCount(),
              spec.hidden(),
              spec.activation(),
              spec.embeddingWidth());
    }
    TrainingData.check(data, spec);
    Model model = ModelFactory.create(spec);
    Standardization scaling =
        data.hasFeatureScaling() ? Standardization.fromProto(data.getFeatureScaling()) : null;
    log.info(
        "trainer {}: model {} with {} features, {} classes, optimizer {} lr {}",
        props.id(),
        spec.type(),
        spec.features(),
        spec.classes(),
        props.optimizer().optimizer(),
        props.optimizer().learningRate());

    Parameters values = Initializers.initial(model, props.agent().seed());
    if (props.model().initFrom() != null) {
      // used only if this trainer initialises a pserver that has no state (see WarmStart)
      values = WarmStart.values(storage, props.model().initFrom(), model, spec, values);
      log.info("warm start: initial values from {}", props.model().initFrom());
    }

    CommunicationProperties comm = props.communication();
    String session = TrainerRegistration.newSession();
    // the pserver count does not change the specs, only the placement: one is as good as any
    List<ParameterSpec> specs =
        new ModelLayout(
                model,
                comm.blockSize(),
                OptimizerConfigs.dense(props.optimizer()),
                OptimizerConfigs.sparse(props.optimizer()),
                1)
            .specs();
    // how the model predicts, for serving replicas: recorded with the job's name by the join
    Membership membership =
        registration.join(session, specs, ModelFiles.description(spec, "", data));
    try {
      return prepare(spec, model, values, test, data, scaling, session, membership);
    } catch (RuntimeException | Error e) {
      membership.close();
      throw e;
    }
  }

  private TrainingContext prepare(
      ModelSpec spec,
      Model model,
      Parameters values,
      List<Example> test,
      DatasetInfo data,
      Standardization scaling,
      String session,
      Membership membership) {
    progress.moveTo(TrainerState.WAITING_FOR_PSERVERS);
    CommunicationProperties comm = props.communication();
    // a registration wakes the wait at once (the directory watches them); the reads every 500 ms
    // are the fallback. The pauses between reads stay short: with the trainer up before the
    // pservers, a backoff of 100-500 ms after each read held it up to half a second after the
    // last pserver registered.
    Duration wait = Duration.ofMillis(Math.min(500, comm.maxBackoff().toMillis()));
    int pservers = directory.awaitAll(wait, stop.retry(Duration.ofMillis(5), Duration.ofMillis(5)));
    // routes by the job's committed placement map, and each newer one, from now on
    PserverClients pc =
        PserverClients.wire(
            model,
            props,
            directory,
            pservers,
            session,
            comm.staleness(),
            membership.locks(),
            stop,
            traffic);
    ShardInitializer initializer = pc.initializer();
    ParameterClient client = pc.client();

    progress.moveTo(TrainerState.INITIALISING);
    initializer.ensureAll(values);
    client.pull(values);
    Dataset testSet = new Dataset(new ArrayList<>(test), spec.features());
    return new TrainingContext(
        spec, model, values, client, testSet, membership, data, scaling, storage);
  }
}
