package dev.paramserver.it;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.Role;
import java.nio.file.Files;
import java.nio.file.Path;

/** A sparse-lr job on a Zipf-distributed click log: the set-up of the serving end-to-end tests. */
final class ClickJobs {
  private ClickJobs() {}

  /**
   * Writes a click log of {@code train} and {@code test} records under {@code dir} ({@code raw/}),
   * converts it to recordio ({@code data/}) and returns a spec run in {@code dir/run} whose trainer
   * trains sparse-lr on it at learning rate 0.1; the caller adds the job, the process counts, the
   * passes and anything else.
   */
  static ClusterSpec.Builder sparseLr(Path dir, int train, int test) throws Exception {
    Path raw = Files.createDirectories(dir.resolve("raw"));
    EmbeddingCapEndToEndTest.writeZipfClickLog(raw.resolve("train.svm"), train, 1);
    EmbeddingCapEndToEndTest.writeZipfClickLog(raw.resolve("test.svm"), test, 2);
    Path data = ModelsEndToEndTest.convertLibsvm(raw, dir.resolve("data"));
    return trainOn(Jobs.spec(dir.resolve("run")), data)
        .property(Role.TRAINER, "paramserver.trainer.model", "sparse-lr")
        .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1");
  }

  /** {@code spec} with the trainer's train and test data: the recordio parts in {@code data}. */
  static ClusterSpec.Builder trainOn(ClusterSpec.Builder spec, Path data) {
    return spec.property(
            Role.TRAINER,
            "paramserver.trainer.train-data",
            data.resolve("train-*.recordio").toString())
        .property(
            Role.TRAINER,
            "paramserver.trainer.test-data",
            data.resolve("test-*.recordio").toString());
  }
}
