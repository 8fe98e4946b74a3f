package dev.paramserver.master.tracking;

import com.google.protobuf.Value;
import dev.paramserver.adminapi.JobView;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The job's hyperparameters: those the trainers sent with SetDataset (model, optimizer and its
 * settings, learning rate, batch size, mode, ...) and the master's own: {@code passes}, {@code
 * pservers} (registered), {@code trainers} (the most registered at once so far) and {@code
 * dataset-records}. Not thread-safe.
 */
final class Hyperparameters {
  private static final ObjectMapper JSON =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  private int mostTrainers;

  /** All of the job's hyperparameters as the view {@code view} shows the job, sorted by name. */
  Map<String, Value> of(Map<String, Value> fromTrainers, JobView view) {
    mostTrainers = Math.max(mostTrainers, view.trainers() == null ? 0 : view.trainers().size());
    Map<String, Value> all = new TreeMap<>(fromTrainers);
    all.put("passes", number(view.job().totalPasses()));
    all.put("pservers", number(view.pservers() == null ? 0 : view.pservers().size()));
    all.put("trainers", number(mostTrainers));
    all.put("dataset-records", number(view.job().datasetRecords()));
    return all;
  }

  /** {@code params} as a JSON object (numbers, strings and booleans as such). */
  static String toJson(Map<String, Value> params) {
    Map<String, Object> plain = new LinkedHashMap<>();
    params.forEach((k, v) -> plain.put(k, plain(v)));
    return JSON.writeValueAsString(plain) + "\n";
  }

  private static Object plain(Value v) {
    return switch (v.getKindCase()) {
      case NUMBER_VALUE -> {
        double d = v.getNumberValue();
        yield d == Math.rint(d) && Math.abs(d) < 1e15 ? (Object) (long) d : (Object) d;
      }
      case BOOL_VALUE -> v.getBoolValue();
      case STRING_VALUE -> v.getStringValue();
      default -> null;
    };
  }

  private static Value number(double d) {
    return Value.newBuilder().setNumberValue(d).build();
  }
}
