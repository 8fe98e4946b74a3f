package dev.paramserver.trainer.training;

import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.service.InvalidPropertyException;
import dev.paramserver.storage.Location;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Warm start ({@code paramserver.trainer.init-from}): the values of a saved model file replace the
 * random initial values: the dense parameters, and the rows of the sparse tables the file holds
 * (rows it does not hold keep the pservers' lazy random initialisation). They reach the pservers
 * only through the usual initialisation, which one trainer performs for pservers that are not
 * initialised, each pserver receiving the rows it owns; pservers that restored a checkpoint are
 * initialised already and keep their state, so a checkpoint always wins over the file.
 */
final class WarmStart {
  static final String PROPERTY = "paramserver.trainer.init-from";

  private WarmStart() {}

  /**
   * Checks at start that a local {@code location} is a model file of type {@code modelType}; an
   * s3:// location is checked when it is read.
   */
  static void check(String location, String modelType) {
    if (Location.isS3(location)) {
      return;
    }
    check(read(Path.of(location)), location, modelType);
  }

  private static void check(ModelFiles.Loaded saved, String file, String modelType) {
    if (!saved.spec().type().equals(modelType)) {
      throw new InvalidPropertyException(
          PROPERTY,
          PROPERTY
              + ": "
              + file
              + " holds a "
              + saved.spec().type()
              + " model but paramserver.trainer.model is "
              + modelType
              + ": train the same model type");
    }
  }

  /**
   * The initial values of {@code model}: those of {@code file}, which must describe the same
   * parameters (names and shapes).
   */
  static Parameters values(
      Storage storage, String file, Model model, ModelSpec spec, Parameters random) {
    ModelFiles.Loaded saved = load(storage, file);
    check(saved, file, spec.type());
    if (!layout(saved.model().parameters()).equals(layout(model.parameters()))) {
      throw new InvalidPropertyException(
          PROPERTY,
          PROPERTY
              + ": "
              + file
              + " holds "
              + describe(saved.spec())
              + " with parameters "
              + layout(saved.model().parameters())
              + ", but this job trains "
              + describe(spec)
              + " with parameters "
              + layout(model.parameters())
              + ": set paramserver.trainer.features, classes and hidden as the saved model has"
              + " them");
    }
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        // The saved rows; the rows the file lacks are created lazily by the pservers.
        Parameters.SparseTable to = random.sparse(def.name());
        saved.parameters().sparse(def.name()).forEach((id, row) -> to.put(id, row.clone()));
      } else {
        float[] from = saved.parameters().dense(def.name());
        System.arraycopy(from, 0, random.dense(def.name()), 0, from.length);
      }
    }
    return random;
  }

  /** Reads the model at {@code location}: a path, or an s3:// object fetched to a temp file. */
  static ModelFiles.Loaded load(Storage storage, String location) {
    if (!Location.isS3(location)) {
      return read(Path.of(location));
    }
    Path tmp = null;
    try {
      tmp = Files.createTempFile("init-from", ".pb");
      try (InputStream in = storage.openStream(location)) {
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      }
      return read(tmp);
    } catch (IOException | RuntimeException e) {
      if (e instanceof InvalidPropertyException i) {
        throw i;
      }
      throw new InvalidPropertyException(
          PROPERTY, PROPERTY + ": cannot read " + location + ": " + e.getMessage());
    } finally {
      if (tmp != null) {
        try {
          Files.deleteIfExists(tmp);
        } catch (IOException ignored) {
          // a temp file left behind is harmless
        }
      }
    }
  }

  private static ModelFiles.Loaded read(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new InvalidPropertyException(
          PROPERTY, PROPERTY + ": no model file at " + file.toAbsolutePath());
    }
    try {
      return ModelFiles.read(file);
    } catch (IOException e) {
      throw new InvalidPropertyException(PROPERTY, PROPERTY + ": " + e.getMessage());
    }
  }

  private static String describe(ModelSpec s) {
    return "a "
        + s.type()
        + " model with "
        + s.features()
        + " features and "
        + s.classes()
        + " classes"
        + (s.hidden().isEmpty() ? "" : ", hidden " + s.hidden());
  }

  private static List<String> layout(List<ParameterDef> defs) {
    return defs.stream()
        .map(d -> d.name() + d.shape() + (d.sparse() ? " sparse" : ""))
        .collect(Collectors.toList());
  }
}
