package dev.paramserver.trainer.training;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.Standardization;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.coordination.Membership;
import dev.paramserver.trainer.pserver.ParameterClient;

/**
 * What a training session works with once set up.
 *
 * @param spec the model's shape
 * @param model the model
 * @param values this trainer's copy of the parameters (pulled from the pservers)
 * @param client the pservers' client
 * @param testSet the test examples (empty: no evaluation)
 * @param membership this trainer's membership of the job, under which it takes the job's locks
 * @param data the training dataset's info (label names, feature scaling), default when it has none
 * @param scaling the standardization of the dense features read from the data, or null for none
 * @param storage reads data files and objects, writes the model (local or {@code s3://})
 */
public record TrainingContext(
    ModelSpec spec,
    Model model,
    Parameters values,
    ParameterClient client,
    Dataset testSet,
    Membership membership,
    DatasetInfo data,
    Standardization scaling,
    Storage storage) {

  /** A context for local data without label names or feature scaling (tests, benchmarks). */
  public TrainingContext(
      ModelSpec spec,
      Model model,
      Parameters values,
      ParameterClient client,
      Dataset testSet,
      Membership membership) {
    this(
        spec,
        model,
        values,
        client,
        testSet,
        membership,
        DatasetInfo.getDefaultInstance(),
        null,
        Storage.create(S3Settings.defaults(), "paramserver.trainer.s3"));
  }

  /** Readies a batch of raw records for the model: standardizes its features, if configured. */
  void prepare(Batch b) {
    if (scaling != null) {
      scaling.apply(b);
    }
  }
}
