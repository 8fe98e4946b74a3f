package dev.paramserver.serving.replica;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.ShardPlacement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The reads a serving replica answers, checked first: sparse rows ({@link #lookup}) and dense
 * parameters ({@link #pull}), each on one version of the {@link ServedModel}.
 */
public final class Lookups {
  /** Rows of one lookup. */
  public record Rows(ServedVersion version, int width, float[] values, int[] defaulted) {}

  /** Dense parameters of one pull, by name, with their definitions. */
  public record Dense(
      ServedVersion version, Map<String, ParameterSpec> specs, Map<String, float[]> values) {}

  private final ServedModel model;
  private final int maxIds;
  private final Duration defaultWait;

  public Lookups(ServedModel model, int maxIds, Duration defaultWait) {
    this.model = model;
    this.maxIds = maxIds;
    this.defaultWait = defaultWait;
  }

  /**
   * True when a read at least {@code min} can be answered now, without waiting: the version served
   * reached it (versions only grow, save a shard reloaded from a primary that lost records).
   */
  public boolean servedNow(ServedVersion.Minimum min) {
    ServedVersion v = model.version();
    return v != null && v.behind(min) == null;
  }

  /** The wait a request asked for, or the default. */
  public Duration waitFor(int waitMs) {
    return waitMs > 0 ? Duration.ofMillis(waitMs) : defaultWait;
  }

  /**
   * The rows {@code ids} of {@code table}, in the request's order.
   *
   * @param width the row width the caller expects; 0: not checked
   * @throws ServiceException TOO_LARGE (too many ids), UNKNOWN_PARAMETER (no such table),
   *     SHAPE_MISMATCH (another width), or as {@link ServedModel#read}
   */
  public Rows lookup(
      String table, long[] ids, int width, ServedVersion.Minimum min, Duration wait) {
    if (ids.length > maxIds) {
      throw new ServiceException(
          ErrorReason.TOO_LARGE,
          "a lookup takes at most "
              + maxIds
              + " ids (paramserver.serving.max-ids), got "
              + ids.length
              + ": split it");
    }
    long hash = ShardPlacement.tableHash(table);
    return model.read(
        min,
        wait,
        view -> {
          int w = view.width(table);
          if (w < 0) {
            throw new ServiceException(
                ErrorReason.UNKNOWN_PARAMETER,
                "sparse table '" + table + "' is not served: the tables are " + tables(view));
          }
          if (width != 0 && width != w) {
            throw new ServiceException(
                ErrorReason.SHAPE_MISMATCH,
                "sparse table '"
                    + table
                    + "' has rows of "
                    + w
                    + " float32 values, the request expects "
                    + width);
          }
          float[] out = new float[ids.length * w];
          int[] defaulted = new int[ids.length];
          int d = 0;
          for (int i = 0; i < ids.length; i++) {
            if (!view.row(table, hash, ids[i], out, i * w)) {
              defaulted[d++] = i;
            }
          }
          return new Rows(view.version(), w, out, java.util.Arrays.copyOf(defaulted, d));
        });
  }

  /**
   * Dense parameters {@code names} (every dense parameter when empty).
   *
   * @throws ServiceException UNKNOWN_PARAMETER naming one that is not a dense parameter
   */
  public Dense pull(List<String> names, ServedVersion.Minimum min, Duration wait) {
    return model.read(
        min,
        wait,
        view -> {
          Map<String, ParameterSpec> all = view.parameters();
          List<String> wanted = new ArrayList<>(names);
          if (wanted.isEmpty()) {
            all.values().stream().filter(p -> !p.getSparse()).forEach(p -> wanted.add(p.getName()));
          }
          Map<String, ParameterSpec> specs = new LinkedHashMap<>();
          Map<String, float[]> values = new LinkedHashMap<>();
          for (String name : wanted) {
            ParameterSpec spec = all.get(name);
            if (spec == null || spec.getSparse()) {
              throw new ServiceException(
                  ErrorReason.UNKNOWN_PARAMETER,
                  "'"
                      + name
                      + "' is not a dense parameter of the model: the dense ones are "
                      + all.values().stream()
                          .filter(p -> !p.getSparse())
                          .map(ParameterSpec::getName)
                          .toList());
            }
            specs.put(name, spec);
            values.put(name, view.dense(spec));
          }
          return new Dense(view.version(), specs, values);
        });
  }

  private static List<String> tables(View view) {
    return view.parameters().values().stream()
        .filter(ParameterSpec::getSparse)
        .map(ParameterSpec::getName)
        .toList();
  }
}
