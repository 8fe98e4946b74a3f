package dev.paramserver.trainer.coordination;

import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.TrainingMode;
import java.util.List;

/**
 * What a trainer tells the job when it joins.
 *
 * @param trainerId the trainer's id, unique in the job
 * @param session identifies this run of the trainer
 * @param endpoint the trainer's admin address ({@code host:httpPort}), published as its
 *     registration
 * @param parameters the model's parameter specs, checked against the job's (master mode)
 * @param mode how the trainer combines gradients with the others (master mode checks it)
 * @param staleness bounded staleness: how many steps a trainer may run ahead
 * @param description how the model predicts (a model file without parameters, its job left empty),
 *     recorded for serving replicas unless a trainer did before; the default instance for none
 */
public record JoinDetails(
    String trainerId,
    String session,
    String endpoint,
    List<ParameterSpec> parameters,
    TrainingMode mode,
    int staleness,
    ModelFile description) {
  public JoinDetails {
    parameters = List.copyOf(parameters);
  }

  /** Details without a model description. */
  public JoinDetails(
      String trainerId,
      String session,
      String endpoint,
      List<ParameterSpec> parameters,
      TrainingMode mode,
      int staleness) {
    this(trainerId, session, endpoint, parameters, mode, staleness, ModelFile.getDefaultInstance());
  }
}
