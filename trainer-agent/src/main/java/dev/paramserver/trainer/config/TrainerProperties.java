package dev.paramserver.trainer.config;

import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Settings of a trainer agent ({@code paramserver.trainer.*}).
 *
 * @param id this trainer's id, unique in the job (default: host name and process id)
 * @param trainData globs of the RecordIO training files (sent to the master with SetDataset; the
 *     master and the trainers must see the same paths)
 * @param testData globs of the RecordIO test files, evaluated at the end of each pass (empty: no
 *     evaluation)
 * @param model the model type: softmax, mlp or sparse-lr
 * @param features dense input features (0: read from the first training record)
 * @param classes number of classes (0: largest label of the test data, else of the first training
 *     file, plus one)
 * @param hidden hidden layer sizes of the mlp, for example 128,64
 * @param activation hidden activation of the mlp: relu or tanh
 * @param optimizer sgd, adam, adamw, adagrad, rmsprop or adadelta (applied by the pservers)
 * @param learningRate base learning rate
 * @param momentum SGD momentum (0 = plain SGD)
 * @param weightDecay L2 weight decay coefficient
 * @param batchSize examples per mini-batch
 * @param blockSize elements per parameter block (a block lives on one pserver)
 * @param sync synchronous training: every step waits for all trainers
 * @param modelOutput where the elected trainer writes the final model (empty: not written)
 * @param rpcTimeout deadline of each call to the master or a pserver
 * @param logEvery log progress every this many batches
 * @param seed seed of the parameter initialisation and of the shuffling (each task's records are
 *     shuffled before they are cut into mini-batches)
 * @param exitWhenDone stop the process when the job is finished
 * @param maxBackoff the longest wait between retries when the master or a pserver is unavailable
 * @param accumulate mini-batches whose gradients are summed (and averaged) before one push
 * @param gradientDtype element type of gradients on the wire: float32, float16 or bfloat16
 * @param prefetch fetch and read the next task while the current one trains
 * @param embeddingWidth sparse-lr: width of the embedding part (0 = wide part only)
 * @param pipeline asynchronous mode: push and pull in the background while the next batch is
 *     computed (the values used are at most one push behind)
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record TrainerProperties(
    String id,
    List<String> trainData,
    List<String> testData,
    @DefaultValue("softmax") String model,
    @DefaultValue("0") @Min(0) int features,
    @DefaultValue("0") @Min(0) int classes,
    List<Integer> hidden,
    @DefaultValue("relu") String activation,
    @DefaultValue("sgd") String optimizer,
    @DefaultValue("0.1") @DecimalMin(value = "0", inclusive = false) float learningRate,
    @DefaultValue("0") @DecimalMin("0") float momentum,
    @DefaultValue("0") @DecimalMin("0") float weightDecay,
    @DefaultValue("64") @Min(1) @Max(1_000_000) int batchSize,
    @DefaultValue("262144") @Min(1) int blockSize,
    @DefaultValue("false") boolean sync,
    Path modelOutput,
    @DefaultValue("10s") Duration rpcTimeout,
    @DefaultValue("200") @Min(1) int logEvery,
    @DefaultValue("42") long seed,
    @DefaultValue("true") boolean exitWhenDone,
    @DefaultValue("10s") Duration maxBackoff,
    @DefaultValue("1") @Min(1) @Max(1024) int accumulate,
    @DefaultValue("float32") String gradientDtype,
    @DefaultValue("true") boolean prefetch,
    @DefaultValue("8") @Min(0) @Max(1024) int embeddingWidth,
    @DefaultValue("true") boolean pipeline) {

  public TrainerProperties {
    hidden = hidden == null ? List.of() : List.copyOf(hidden);
    testData = testData == null ? List.of() : List.copyOf(testData);
    trainData = trainData == null ? List.of() : List.copyOf(trainData);
    if (id == null || id.isBlank()) {
      id = defaultId();
    }
  }

  /** The wire type of gradients. */
  public dev.paramserver.proto.v1.DataType gradientWireType() {
    return switch (gradientDtype.toLowerCase(java.util.Locale.ROOT)) {
      case "float32", "fp32" -> dev.paramserver.proto.v1.DataType.FLOAT32;
      case "float16", "fp16", "half" -> dev.paramserver.proto.v1.DataType.FLOAT16;
      case "bfloat16", "bf16" -> dev.paramserver.proto.v1.DataType.BFLOAT16;
      default ->
          throw new IllegalArgumentException(
              "paramserver.trainer.gradient-dtype '"
                  + gradientDtype
                  + "' is unknown: choose float32, float16 or bfloat16");
    };
  }

  /** The training globs, required. */
  public List<String> requireTrainData() {
    if (trainData.isEmpty()) {
      throw new IllegalStateException(
          "paramserver.trainer.train-data is empty: set it to the globs of the RecordIO training"
              + " files");
    }
    return trainData;
  }

  private static String defaultId() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      host = "trainer";
    }
    return host + "-" + ProcessHandle.current().pid();
  }
}
