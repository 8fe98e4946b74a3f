package dev.paramserver.serving.web;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.serving.replica.Lookups;
import dev.paramserver.serving.replica.Predictions;
import dev.paramserver.serving.replica.ServedVersion;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The Serving calls over HTTP/JSON ({@code POST /v1/lookup}, {@code POST /v1/pull}, {@code POST
 * /v1/predict}): the same {@link Lookups} and {@link Predictions} calls as the gRPC service, with
 * the same checks; errors are answered by {@link ServingHttpErrors}. Values are JSON numbers
 * holding the float32 values exactly.
 */
@RestController
final class ServingRestController {
  private final Lookups lookups;
  private final Predictions predictions;

  ServingRestController(Lookups lookups, Predictions predictions) {
    this.lookups = lookups;
    this.predictions = predictions;
  }

  /**
   * A position in a {@code min_version}.
   *
   * @param index the shard index
   * @param sequence the least sequence the answer's version holds for it
   */
  record Position(Integer index, Long sequence) {}

  /**
   * The least version an answer may be computed on (as {@code MinVersion} in serving.proto).
   *
   * @param shards every listed shard at least at its sequence
   * @param number with no shard listed and {@code replica} naming this replica: the least number
   * @param replica the replica that numbered {@code number}
   * @param waitMs how long to wait for it; 0 or absent: paramserver.serving.min-version-wait
   */
  record MinVersion(
      List<Position> shards,
      Long number,
      String replica,
      @JsonProperty("wait_ms") Integer waitMs) {}

  /** {@code POST /v1/lookup}: table, ids, width (0 or absent: not checked), min_version. */
  record LookupRequest(
      String table,
      List<Long> ids,
      Integer width,
      @JsonProperty("min_version") MinVersion minVersion) {}

  /** A version as answered: its number, its replica and every shard's place. */
  record Version(
      long number, String replica, List<ServedVersion.Position> shards, long placementEpoch) {
    static Version of(ServedVersion v) {
      return new Version(v.number(), v.replica(), v.shards(), v.placementEpoch());
    }
  }

  /** Rows in the request's order; {@code defaulted}: positions that read the initial row. */
  record LookupResponse(Version version, int width, List<float[]> rows, int[] defaulted) {}

  /** {@code POST /v1/pull}: dense parameter names (empty or absent: all), min_version. */
  record PullRequest(List<String> names, @JsonProperty("min_version") MinVersion minVersion) {}

  /** One dense parameter: its shape and its values, row-major. */
  record Tensor(String name, List<Long> shape, float[] values) {}

  record PullResponse(Version version, List<Tensor> tensors) {}

  /**
   * One example, raw features (as {@code Example} in example.proto; a label is not needed).
   *
   * @param dense dense feature values
   * @param sparseIds sparse feature ids
   * @param sparseValues their values, parallel to {@code sparse_ids}; empty or absent: every id 1
   */
  record ExampleJson(
      float[] dense,
      @JsonProperty("sparse_ids") long[] sparseIds,
      @JsonProperty("sparse_values") float[] sparseValues) {}

  /** {@code POST /v1/predict}: examples, min_version. */
  record PredictRequest(
      List<ExampleJson> examples, @JsonProperty("min_version") MinVersion minVersion) {}

  /**
   * Per example its {@code classes} probabilities ({@code probabilities[i]}) and its most probable
   * class ({@code predicted[i]}, the first of equal ones).
   */
  record PredictResponse(
      Version version, int classes, List<float[]> probabilities, int[] predicted) {}

  @PostMapping("/v1/lookup")
  LookupResponse lookup(@RequestBody LookupRequest request) {
    if (request.table() == null || request.table().isEmpty()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT, "'table' is missing: name a sparse table");
    }
    int width = request.width() == null ? 0 : request.width();
    if (width < 0) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT, "'width' must be 0 (not checked) or more, got " + width);
    }
    List<Long> idList = request.ids() == null ? List.of() : request.ids();
    long[] ids = new long[idList.size()];
    for (int i = 0; i < ids.length; i++) {
      Long id = idList.get(i);
      if (id == null) {
        throw new ServiceException(ErrorReason.BAD_ARGUMENT, "'ids[" + i + "]' is null");
      }
      ids[i] = id;
    }
    Lookups.Rows rows =
        lookups.lookup(
            request.table(),
            ids,
            width,
            minimum(request.minVersion()),
            lookups.waitFor(wait(request.minVersion())));
    List<float[]> out = new ArrayList<>(ids.length);
    for (int i = 0; i < ids.length; i++) {
      out.add(Arrays.copyOfRange(rows.values(), i * rows.width(), (i + 1) * rows.width()));
    }
    return new LookupResponse(Version.of(rows.version()), rows.width(), out, rows.defaulted());
  }

  @PostMapping("/v1/pull")
  PullResponse pull(@RequestBody(required = false) PullRequest request) {
    List<String> names = request == null || request.names() == null ? List.of() : request.names();
    MinVersion min = request == null ? null : request.minVersion();
    Lookups.Dense dense = lookups.pull(names, minimum(min), lookups.waitFor(wait(min)));
    List<Tensor> tensors = new ArrayList<>();
    for (Map.Entry<String, float[]> e : dense.values().entrySet()) {
      ParameterSpec spec = dense.specs().get(e.getKey());
      tensors.add(new Tensor(e.getKey(), spec.getShapeList(), e.getValue()));
    }
    return new PullResponse(Version.of(dense.version()), tensors);
  }

  @PostMapping("/v1/predict")
  PredictResponse predict(@RequestBody PredictRequest request) {
    List<ExampleJson> in = request.examples() == null ? List.of() : request.examples();
    List<Example> examples = new ArrayList<>(in.size());
    for (int i = 0; i < in.size(); i++) {
      examples.add(example(in.get(i), i));
    }
    Predictions.Answer a =
        predictions.predict(
            examples, minimum(request.minVersion()), lookups.waitFor(wait(request.minVersion())));
    int k = a.classes();
    List<float[]> probabilities = new ArrayList<>(a.predicted().length);
    for (int i = 0; i < a.predicted().length; i++) {
      probabilities.add(Arrays.copyOfRange(a.probabilities(), i * k, (i + 1) * k));
    }
    return new PredictResponse(Version.of(a.version()), k, probabilities, a.predicted());
  }

  private static Example example(ExampleJson e, int i) {
    if (e == null) {
      throw new ServiceException(ErrorReason.BAD_ARGUMENT, "'examples[" + i + "]' is null");
    }
    Example.Builder b = Example.newBuilder();
    if (e.dense() != null) {
      for (float v : e.dense()) {
        b.addDense(v);
      }
    }
    if (e.sparseIds() != null) {
      for (long id : e.sparseIds()) {
        b.addSparseIds(id);
      }
    }
    if (e.sparseValues() != null) {
      for (float v : e.sparseValues()) {
        b.addSparseValues(v);
      }
    }
    return b.build();
  }

  private static int wait(MinVersion m) {
    if (m == null || m.waitMs() == null) {
      return 0;
    }
    if (m.waitMs() < 0) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "'min_version.wait_ms' must be 0 (the default wait) or more, got " + m.waitMs());
    }
    return m.waitMs();
  }

  static ServedVersion.Minimum minimum(MinVersion m) {
    List<Position> shards = m == null || m.shards() == null ? List.of() : m.shards();
    String replica = m == null || m.replica() == null ? "" : m.replica();
    if (shards.isEmpty() && replica.isEmpty()) {
      return ServedVersion.Minimum.ANY;
    }
    List<ServedVersion.Position> at = new ArrayList<>(shards.size());
    for (int i = 0; i < shards.size(); i++) {
      Position p = shards.get(i);
      if (p == null
          || p.index() == null
          || p.sequence() == null
          || p.index() < 0
          || p.sequence() < 0) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            "'min_version.shards[" + i + "]' needs an index and a sequence of 0 or more, got " + p);
      }
      at.add(new ServedVersion.Position(p.index(), 0, p.sequence()));
    }
    long number = m == null || m.number() == null ? 0 : m.number();
    return new ServedVersion.Minimum(at, number, replica);
  }
}
