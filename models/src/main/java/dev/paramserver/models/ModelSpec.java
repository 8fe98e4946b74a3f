package dev.paramserver.models;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What model to build: its type and hyper-parameters.
 *
 * @param type "softmax", "mlp" or "sparse-lr"
 * @param features number of dense input features
 * @param classes number of classes
 * @param hidden hidden layer sizes (mlp)
 * @param activation hidden activation (mlp)
 * @param embeddingWidth width of the embedding part (sparse-lr; 0 = wide part only)
 */
public record ModelSpec(
    String type,
    int features,
    int classes,
    List<Integer> hidden,
    Mlp.Activation activation,
    int embeddingWidth) {

  public ModelSpec {
    hidden = List.copyOf(hidden);
  }

  public static ModelSpec softmax(int features, int classes) {
    return new ModelSpec("softmax", features, classes, List.of(), Mlp.Activation.RELU, 0);
  }

  /** The spec as string pairs, stored in model files. */
  public Map<String, String> toConfig() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("features", Integer.toString(features));
    m.put("classes", Integer.toString(classes));
    m.put("hidden", hidden.stream().map(String::valueOf).collect(Collectors.joining(",")));
    m.put("activation", activation.name().toLowerCase(Locale.ROOT));
    m.put("embedding-width", Integer.toString(embeddingWidth));
    return m;
  }

  /** Reads a spec back from a model file's type and config. */
  public static ModelSpec fromConfig(String type, Map<String, String> config) {
    String hiddenText = config.getOrDefault("hidden", "");
    List<Integer> hidden =
        hiddenText.isBlank()
            ? List.of()
            : Arrays.stream(hiddenText.split(","))
                .map(String::trim)
                .map(Integer::parseInt)
                .toList();
    return new ModelSpec(
        type,
        Integer.parseInt(config.getOrDefault("features", "0")),
        Integer.parseInt(config.getOrDefault("classes", "2")),
        hidden,
        Mlp.Activation.valueOf(config.getOrDefault("activation", "relu").toUpperCase(Locale.ROOT)),
        Integer.parseInt(config.getOrDefault("embedding-width", "0")));
  }
}
