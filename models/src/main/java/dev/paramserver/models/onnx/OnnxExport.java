package dev.paramserver.models.onnx;

import dev.paramserver.models.AtomicFiles;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.SparseLogisticRegression;
import dev.paramserver.models.Standardization;
import dev.paramserver.onnx.proto.ModelProto;
import dev.paramserver.onnx.proto.OperatorSetIdProto;
import dev.paramserver.onnx.proto.StringStringEntryProto;
import dev.paramserver.onnx.proto.TensorProto.DataType;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Exports a trained model as an ONNX model (IR version 8, opset 13 plus ai.onnx.ml 2), with the
 * standardization of the features as its first nodes and the label names in its metadata.
 *
 * <p>Inputs: {@code features} (float32 [N, F], raw dense features) for softmax and mlp, and for
 * sparse-lr with dense features; {@code sparse_ids} (int64 [N, K]) and {@code sparse_values}
 * (float32 [N, K]) for sparse-lr, each row's ids padded to K with value 0. Outputs: {@code
 * probabilities} (float32 [N, classes]) and {@code predicted} (int64 [N], the most probable class).
 */
public final class OnnxExport {
  /** The metadata keys written into {@code metadata_props}. */
  public static final String META_MODEL = "paramserver.model";

  public static final String META_LABELS = "paramserver.label_names";
  public static final String META_STANDARDIZED = "paramserver.standardized";
  public static final String META_CONFIG_PREFIX = "paramserver.config.";

  static final int IR_VERSION = 8;
  static final int OPSET = 13;

  private OnnxExport() {}

  /** The ONNX model of a model read from a model file. */
  public static ModelProto build(ModelFiles.Loaded loaded) {
    return build(
        loaded.spec(),
        loaded.parameters(),
        loaded.labelNames(),
        loaded.standardization().orElse(null));
  }

  /**
   * The ONNX model.
   *
   * @param scaling the standardization of the dense features, or null for none
   * @throws IllegalArgumentException for a model type the export does not know
   */
  public static ModelProto build(
      ModelSpec spec, Parameters params, List<String> labelNames, Standardization scaling) {
    OnnxGraph g = new OnnxGraph("paramserver_" + spec.type().replace('-', '_'));
    String x = null;
    if (spec.features() > 0) {
      g.input(
          "features",
          DataType.FLOAT,
          "raw dense features" + (scaling == null ? "" : " (standardized inside the model)"),
          "N",
          spec.features());
      x = "features";
      if (scaling != null) {
        float[] mean = new float[scaling.features()];
        float[] scale = new float[scaling.features()];
        for (int i = 0; i < mean.length; i++) {
          mean[i] = scaling.mean(i);
          scale[i] = scaling.scale(i);
        }
        String centred =
            g.op("Sub", "centred", List.of(x, g.floats("feature_mean", mean, mean.length)));
        x =
            g.op(
                "Div",
                "standardized",
                List.of(centred, g.floats("feature_scale", scale, scale.length)));
      }
    }
    String probs;
    switch (spec.type()) {
      case "softmax", "mlp" -> probs = mlp(g, spec, params, x);
      case "sparse-lr" -> probs = sparseLr(g, spec, params, x);
      default ->
          throw new IllegalArgumentException(
              "the ONNX export knows softmax, mlp and sparse-lr, not '" + spec.type() + "'");
    }
    g.op(
        "ArgMax",
        "predicted",
        List.of(probs),
        OnnxGraph.intAttr("axis", 1),
        OnnxGraph.intAttr("keepdims", 0));
    g.output("probabilities", DataType.FLOAT, "class probabilities", "N", spec.classes());
    g.output("predicted", DataType.INT64, "the most probable class index", "N");

    ModelProto.Builder m =
        ModelProto.newBuilder()
            .setIrVersion(IR_VERSION)
            .setProducerName("paramserver")
            .setProducerVersion("1")
            .setDomain("dev.paramserver")
            .setModelVersion(1)
            .setDocString(
                spec.type()
                    + " model trained by paramserver; input raw features, output class"
                    + " probabilities")
            .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(OPSET))
            .setGraph(g.build());
    if (spec.type().equals("sparse-lr")) {
      m.addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("ai.onnx.ml").setVersion(2));
    }
    Map<String, String> meta = new LinkedHashMap<>();
    meta.put(META_MODEL, spec.type());
    spec.toConfig().forEach((k, v) -> meta.put(META_CONFIG_PREFIX + k, v));
    meta.put(META_STANDARDIZED, Boolean.toString(scaling != null));
    if (!labelNames.isEmpty()) {
      meta.put(META_LABELS, jsonArray(labelNames));
    }
    meta.forEach(
        (k, v) -> m.addMetadataProps(StringStringEntryProto.newBuilder().setKey(k).setValue(v)));
    return m.build();
  }

  /** Dense layers: Gemm per layer, the hidden activation between, softmax at the end. */
  private static String mlp(OnnxGraph g, ModelSpec spec, Parameters params, String x) {
    List<ParameterDef> defs = mlpModel(spec).parameters();
    String a = x;
    for (int i = 0; i < defs.size(); i += 2) {
      ParameterDef w = defs.get(i);
      ParameterDef b = defs.get(i + 1);
      long in = w.shape().get(0);
      long out = w.shape().get(1);
      String wName = g.floats(w.name(), params.dense(w.name()), in, out);
      String bName = g.floats(b.name(), params.dense(b.name()), out);
      boolean last = i + 2 == defs.size();
      String z = g.op("Gemm", g.name(last ? "logits" : "z"), List.of(a, wName, bName));
      if (last) {
        return g.op("Softmax", "probabilities", List.of(z), OnnxGraph.intAttr("axis", 1));
      }
      a =
          g.op(
              spec.activation() == Mlp.Activation.RELU ? "Relu" : "Tanh",
              g.name("hidden"),
              List.of(z));
    }
    throw new IllegalStateException("the model has no layers");
  }

  private static Mlp mlpModel(ModelSpec spec) {
    return spec.type().equals("softmax")
        ? Mlp.softmax(spec.features(), spec.classes())
        : new Mlp("mlp", spec.features(), spec.classes(), spec.hidden(), spec.activation());
  }

  /**
   * z = bias + dense.w · x + Σ_k wide[id_k] v_k + emb.out · Σ_k emb[id_k] v_k; p1 = sigmoid(z).
   * Each sparse table becomes a matrix of its rows plus a zero row; ids map to row numbers with
   * ai.onnx.ml LabelEncoder (an id without a row maps to the zero row, as the Java model treats an
   * absent row), then {@code Gather} picks the rows.
   */
  private static String sparseLr(OnnxGraph g, ModelSpec spec, Parameters params, String x) {
    g.input("sparse_ids", DataType.INT64, "sparse feature ids, padded per row", "N", "K");
    g.input(
        "sparse_values",
        DataType.FLOAT,
        "values of the sparse features (1 for present ids, 0 for padding)",
        "N",
        "K");
    String one = g.longs("axis_1", new long[] {1}, 1);
    String z = g.floats("bias", params.dense(SparseLogisticRegression.BIAS), 1);
    if (x != null) {
      String dw =
          g.floats(
              SparseLogisticRegression.DENSE_W,
              params.dense(SparseLogisticRegression.DENSE_W),
              spec.features());
      String dense = g.op("MatMul", "dense_term", List.of(x, dw));
      z = g.op("Add", g.name("z"), List.of(z, dense));
    }
    // wide part: a [rows + 1] vector
    Table wide = table(params.sparse(SparseLogisticRegression.WIDE));
    String wideIdx = lookup(g, "wide", wide);
    String wideW = g.floats("wide_rows", wide.values, wide.ids.length + 1);
    String wideG = g.op("Gather", "wide_gathered", List.of(wideW, wideIdx));
    String wideTerm =
        g.op(
            "ReduceSum",
            "wide_term",
            List.of(g.op("Mul", "wide_weighted", List.of(wideG, "sparse_values")), one),
            OnnxGraph.intAttr("keepdims", 0));
    z = g.op("Add", g.name("z"), List.of(z, wideTerm));
    if (spec.embeddingWidth() > 0) {
      int d = spec.embeddingWidth();
      Table emb = table(params.sparse(SparseLogisticRegression.EMB));
      String embIdx = lookup(g, "emb", emb);
      String embW = g.floats("emb_rows", emb.values, emb.ids.length + 1, d);
      String rows = g.op("Gather", "emb_gathered", List.of(embW, embIdx)); // [N, K, D]
      String v3 =
          g.op(
              "Unsqueeze",
              "sparse_values_3d",
              List.of("sparse_values", g.longs("axis_2", new long[] {2}, 1)));
      String pooled =
          g.op(
              "ReduceSum",
              "emb_pooled",
              List.of(g.op("Mul", "emb_weighted", List.of(rows, v3)), one),
              OnnxGraph.intAttr("keepdims", 0)); // [N, D]
      String out =
          g.floats(
              SparseLogisticRegression.EMB_OUT, params.dense(SparseLogisticRegression.EMB_OUT), d);
      String embTerm = g.op("MatMul", "emb_term", List.of(pooled, out));
      z = g.op("Add", g.name("z"), List.of(z, embTerm));
    }
    String p1 = g.op("Sigmoid", "p1", List.of(z)); // [N]
    String p0 = g.op("Sub", "p0", List.of(g.floats("one", new float[] {1f}, 1), p1));
    String c0 = g.op("Unsqueeze", "p0_col", List.of(p0, one));
    String c1 = g.op("Unsqueeze", "p1_col", List.of(p1, one));
    return g.op("Concat", "probabilities", List.of(c0, c1), OnnxGraph.intAttr("axis", 1));
  }

  /** A sparse table as sorted ids and a row-major matrix of their rows plus a zero row. */
  private record Table(long[] ids, float[] values) {}

  private static Table table(Parameters.SparseTable t) {
    long[] ids = t.sortedIds();
    float[] values = new float[(ids.length + 1) * t.width()];
    for (int i = 0; i < ids.length; i++) {
      System.arraycopy(t.rowOrNull(ids[i]), 0, values, i * t.width(), t.width());
    }
    return new Table(ids, values);
  }

  /** ids → row numbers of the table (unknown ids → the zero row, the last). */
  private static String lookup(OnnxGraph g, String table, Table t) {
    long[] keys = t.ids;
    long[] rowNumbers = new long[t.ids.length];
    for (int i = 0; i < rowNumbers.length; i++) {
      rowNumbers[i] = i;
    }
    if (keys.length == 0) {
      // a table without rows: LabelEncoder needs a key, so map one to the zero row as well
      keys = new long[] {Long.MIN_VALUE};
      rowNumbers = new long[] {0};
    }
    return g.node(
        "ai.onnx.ml",
        "LabelEncoder",
        table + "_row",
        List.of("sparse_ids"),
        OnnxGraph.intsAttr("keys_int64s", keys),
        OnnxGraph.intsAttr("values_int64s", rowNumbers),
        OnnxGraph.intAttr("default_int64", t.ids.length));
  }

  /** Writes atomically (a temp file, fsync, rename). */
  public static void write(Path path, ModelProto model) throws IOException {
    AtomicFiles.write(path, model);
  }

  /** A JSON array of strings, e.g. {@code ["setosa","versicolor"]}. */
  static String jsonArray(List<String> items) {
    List<String> quoted = new ArrayList<>();
    for (String s : items) {
      StringBuilder b = new StringBuilder("\"");
      for (char c : s.toCharArray()) {
        switch (c) {
          case '"' -> b.append("\\\"");
          case '\\' -> b.append("\\\\");
          case '\n' -> b.append("\\n");
          case '\r' -> b.append("\\r");
          case '\t' -> b.append("\\t");
          default -> {
            if (c < 0x20) {
              b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
              b.append(c);
            }
          }
        }
      }
      quoted.add(b.append('"').toString());
    }
    return "[" + String.join(",", quoted) + "]";
  }
}
