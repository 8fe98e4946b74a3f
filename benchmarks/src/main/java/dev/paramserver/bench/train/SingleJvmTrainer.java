package dev.paramserver.bench.train;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The training baseline: the same model (softmax regression), data, batch size and plain SGD as the
 * distributed job, in one JVM with no RPC. Each pass reads the RecordIO files, shuffles, cuts
 * batches, trains and evaluates on the test set, as a trainer does per pass.
 */
final class SingleJvmTrainer {
  /** Samples per second of each pass and the final test accuracy. */
  record Result(List<Double> samplesPerSec, List<Long> records, double accuracy) {
    /** Records over seconds of the passes from {@code first} on. */
    double rateFrom(int first) {
      double recs = 0;
      double secs = 0;
      for (int i = first; i < records.size(); i++) {
        recs += records.get(i);
        secs += records.get(i) / samplesPerSec.get(i);
      }
      return recs / secs;
    }
  }

  private SingleJvmTrainer() {}

  static Result run(
      List<String> trainGlobs, List<String> testGlobs, int passes, int batchSize, float lr)
      throws IOException {
    List<Example> test = Dataset.readGlobs(testGlobs);
    int features = Dataset.featuresOf(test);
    int classes = Dataset.classesOf(test);
    Model model = Mlp.softmax(features, classes);
    Parameters params = Initializers.initial(model, 42);
    Parameters grads = Parameters.zerosLike(model);
    Dataset testSet = new Dataset(test, features);
    List<Double> rates = new ArrayList<>();
    List<Long> records = new ArrayList<>();
    double accuracy = 0;
    for (int pass = 0; pass < passes; pass++) {
      long t0 = System.nanoTime();
      List<Example> train = new ArrayList<>(Dataset.readGlobs(trainGlobs));
      Collections.shuffle(train, new Random(pass));
      long n = 0;
      for (Batch b : new Dataset(train, features).batches(batchSize)) {
        grads.clear();
        model.trainStep(params, b, grads);
        for (String name : params.denseNames()) {
          float[] w = params.dense(name);
          float[] g = grads.dense(name);
          for (int i = 0; i < w.length; i++) {
            w[i] -= lr * g[i];
          }
        }
        n += b.size();
      }
      accuracy = Evaluation.of(model, params, testSet, 1024).accuracy();
      double secs = (System.nanoTime() - t0) / 1e9;
      rates.add(n / secs);
      records.add(n);
    }
    return new Result(rates, records, accuracy);
  }
}
