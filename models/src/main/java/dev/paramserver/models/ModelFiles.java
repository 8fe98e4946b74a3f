package dev.paramserver.models;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.NamedTensor;
import dev.paramserver.proto.v1.SparseTable;
import dev.paramserver.storage.Storage;
import dev.paramserver.tensor.TensorCodec;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/** Writes and reads trained models ({@code paramserver.v1.ModelFile} protobuf). */
public final class ModelFiles {
  private ModelFiles() {}

  /** A model read back from a file, with its parameters. */
  public record Loaded(ModelSpec spec, Model model, Parameters parameters, ModelFile file) {

    /** Class names by index (from the training data), empty when classes are just numbered. */
    public List<String> labelNames() {
      return file.getLabelNamesList();
    }

    /** The standardization the model expects applied to raw dense features, if any. */
    public Optional<Standardization> standardization() {
      return file.hasFeatureScaling()
          ? Optional.of(Standardization.fromProto(file.getFeatureScaling()))
          : Optional.empty();
    }

    /** Readies a batch of raw features for the model: applies the standardization, if any. */
    public void prepare(Batch b) {
      if (file.hasFeatureScaling()) {
        standardization().get().apply(b);
      }
    }

    /** The name of class {@code k}: its label name, else the index itself. */
    public String className(int k) {
      return k >= 0 && k < labelNames().size() ? labelNames().get(k) : Integer.toString(k);
    }
  }

  /** Writes atomically: a temp file, fsync, then rename over {@code path}. */
  public static void write(Path path, ModelSpec spec, Model model, Parameters params, String job)
      throws IOException {
    write(path, spec, model, params, job, DatasetInfo.getDefaultInstance());
  }

  /**
   * Writes atomically, carrying the training data's label names and feature scaling (from {@code
   * data}, a dataset's info; the default instance for none).
   */
  public static void write(
      Path path, ModelSpec spec, Model model, Parameters params, String job, DatasetInfo data)
      throws IOException {
    ModelFile.Builder b = description(spec, job, data).toBuilder();
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        Parameters.SparseTable t = params.sparse(def.name());
        SparseTable.Builder sb = SparseTable.newBuilder().setName(def.name()).setWidth(t.width());
        long[] ids = t.sortedIds();
        float[] all = new float[ids.length * t.width()];
        for (int i = 0; i < ids.length; i++) {
          sb.addRowIds(ids[i]);
          System.arraycopy(t.rowOrNull(ids[i]), 0, all, i * t.width(), t.width());
        }
        b.addSparseTables(sb.setData(TensorCodec.encode(all)));
      } else {
        b.addParameters(
            NamedTensor.newBuilder()
                .setName(def.name())
                .addAllShape(def.shape())
                .setDtype(DataType.FLOAT32)
                .setData(TensorCodec.encode(params.dense(def.name()))));
      }
    }
    AtomicFiles.write(path, b.build());
  }

  /**
   * A model file without parameters: the model's type and configuration, and the training data's
   * label names and feature scaling ({@code data}, a dataset's info; the default instance for
   * none). What predicting needs besides the parameters; {@link #read(InputStream, String)} reads
   * it back with every parameter at zero.
   */
  public static ModelFile description(ModelSpec spec, String job, DatasetInfo data) {
    ModelFile.Builder b =
        ModelFile.newBuilder()
            .setModel(spec.type())
            .putAllConfig(spec.toConfig())
            .setCreatedMs(System.currentTimeMillis())
            .setJob(job == null ? "" : job)
            .addAllLabelNames(data.getLabelNamesList());
    if (data.hasFeatureScaling()) {
      b.setFeatureScaling(data.getFeatureScaling());
    }
    return b.build();
  }

  /** Reads a model file and checks every parameter against the model it describes. */
  public static Loaded read(Path path) throws IOException {
    try (InputStream in = Files.newInputStream(path)) {
      return read(in, path.toString());
    }
  }

  /**
   * Reads a model file or object, local or {@code s3://bucket/key} (streamed as it downloads), and
   * checks every parameter against the model it describes.
   */
  public static Loaded read(Storage storage, String location) throws IOException {
    try (InputStream in = storage.openStream(location)) {
      return read(in, location);
    }
  }

  /**
   * Reads a model from {@code in} and checks every parameter against the model it describes.
   *
   * @param path names the model in error messages
   */
  public static Loaded read(InputStream in, String path) throws IOException {
    ModelFile file;
    try {
      file = ModelFile.parseFrom(in);
    } catch (InvalidProtocolBufferException e) {
      throw new IOException(path + " is not a paramserver model file: " + e.getMessage(), e);
    }
    if (file.getModel().isEmpty()) {
      throw new IOException(path + " is not a paramserver model file: it names no model type");
    }
    ModelSpec spec;
    Model model;
    try {
      spec = ModelSpec.fromConfig(file.getModel(), file.getConfigMap());
      model = ModelFactory.create(spec);
    } catch (IllegalArgumentException e) {
      throw new IOException(path + " describes a model that cannot be built: " + e.getMessage(), e);
    }
    if (file.hasFeatureScaling()) {
      int scaled = file.getFeatureScaling().getMeanCount();
      if (scaled != spec.features()) {
        throw new IOException(
            path
                + ": the feature scaling covers "
                + scaled
                + " features, the model has "
                + spec.features());
      }
      try {
        Standardization.fromProto(file.getFeatureScaling());
      } catch (IllegalArgumentException e) {
        throw new IOException(path + ": " + e.getMessage(), e);
      }
    }
    if (file.getLabelNamesCount() > 0 && file.getLabelNamesCount() != spec.classes()) {
      throw new IOException(
          path
              + ": the model names "
              + file.getLabelNamesCount()
              + " classes but has "
              + spec.classes());
    }
    Parameters params = Parameters.zerosLike(model);
    for (NamedTensor t : file.getParametersList()) {
      float[] dst;
      try {
        dst = params.dense(t.getName());
      } catch (IllegalArgumentException e) {
        throw new IOException(path + ": parameter '" + t.getName() + "' is not part of the model");
      }
      int n = TensorCodec.elementCount(t.getData(), t.getDtype());
      if (n != dst.length) {
        throw new IOException(
            path
                + ": parameter '"
                + t.getName()
                + "' has "
                + n
                + " values, the model expects "
                + dst.length);
      }
      TensorCodec.decode(t.getData(), t.getDtype(), dst, 0);
    }
    for (SparseTable t : file.getSparseTablesList()) {
      Parameters.SparseTable table = params.sparse(t.getName());
      float[] all = TensorCodec.decode(t.getData());
      for (int i = 0; i < t.getRowIdsCount(); i++) {
        table.put(
            t.getRowIds(i), Arrays.copyOfRange(all, i * t.getWidth(), (i + 1) * t.getWidth()));
      }
    }
    return new Loaded(spec, model, params, file);
  }
}
