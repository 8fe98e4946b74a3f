package dev.paramserver.psctl.model;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.Standardization;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Run;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Trains a model in one JVM with plain SGD, as a trainer would, and saves it. */
public final class InProcessTraining {
  private InProcessTraining() {}

  /**
   * Trains {@code spec} on the examples for {@code passes} passes (standardizing with the info's
   * scaling, if any) and writes the model with the info's label names and scaling.
   */
  public static Path trainAndSave(
      ModelSpec spec, List<Example> train, DatasetInfo info, int passes, float lr, Path out)
      throws Exception {
    Model m = ModelFactory.create(spec);
    Parameters p = Initializers.initial(m, 1);
    Parameters g = Parameters.zerosLike(m);
    Standardization s =
        info.hasFeatureScaling() ? Standardization.fromProto(info.getFeatureScaling()) : null;
    Dataset data = new Dataset(new ArrayList<>(train), spec.features());
    for (int pass = 0; pass < passes; pass++) {
      data.shuffle(pass);
      for (Batch b : data.batches(16)) {
        if (s != null) {
          s.apply(b);
        }
        g.clear();
        m.trainStep(p, b, g);
        for (String name : p.denseNames()) {
          float[] w = p.dense(name);
          float[] gw = g.dense(name);
          for (int i = 0; i < w.length; i++) {
            w[i] -= lr * gw[i];
          }
        }
        for (String name : p.sparseNames()) {
          Parameters.SparseTable to = p.sparse(name);
          g.sparse(name)
              .forEach(
                  (id, gw) -> {
                    float[] w = to.row(id);
                    for (int i = 0; i < w.length; i++) {
                      w[i] -= lr * gw[i];
                    }
                  });
          g.sparse(name).clear();
        }
      }
    }
    ModelFiles.write(out, spec, m, p, "in-process", info);
    return out;
  }

  /**
   * The iris CSV converted with --standardize into {@code dir}, and a softmax model trained on it.
   */
  public record Iris(Path data, DatasetInfo info, Path model) {}

  /** Converts the test resource iris.csv into {@code dir/iris-00000.recordio} and trains on it. */
  public static Iris iris(Path dir) throws Exception {
    Path csv = Path.of(InProcessTraining.class.getResource("/iris.csv").toURI());
    Run r =
        Run.psctl("convert", "--input", csv.toString(), "--out", dir + "/iris", "--standardize");
    if (r.code() != 0) {
      throw new AssertionError("psctl convert iris.csv: " + r.err());
    }
    Path data = dir.resolve("iris-00000.recordio");
    DatasetInfo info = DatasetInfos.read(dir.resolve("iris.dataset.pb"));
    Path model =
        trainAndSave(
            ModelSpec.softmax(4, 3),
            Dataset.readGlobs(List.of(data.toString())),
            info,
            30,
            0.1f,
            dir.resolve("model.pb"));
    return new Iris(data, info, model);
  }
}
