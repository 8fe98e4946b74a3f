package dev.paramserver.trainer.config;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotEmpty;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * What the trainer reads ({@code paramserver.trainer.*}, the keys below only).
 *
 * @param trainData globs of the RecordIO training files, required (sent to the master with
 *     SetDataset; the master and the trainers must see the same paths; each must match a file)
 * @param testData globs of the RecordIO test files, evaluated at the end of each pass by one
 *     elected trainer, in the background (empty: no evaluation)
 * @param batchSize examples per mini-batch
 * @param prefetch fetch and read the next task while the current one trains
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record DataProperties(
    @NotEmpty List<String> trainData,
    List<String> testData,
    @DefaultValue("64") @Min(1) @Max(1_000_000) int batchSize,
    @DefaultValue("true") boolean prefetch) {

  public DataProperties {
    testData = testData == null ? List.of() : List.copyOf(testData);
    trainData = trainData == null ? List.of() : List.copyOf(trainData);
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
}
