package dev.paramserver.trainer.training;

import com.google.protobuf.Value;
import dev.paramserver.trainer.config.LrScheduleKind;
import dev.paramserver.trainer.config.ModelType;
import dev.paramserver.trainer.config.OptimizerKind;
import dev.paramserver.trainer.config.OptimizerProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.config.TrainingModeSetting;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The job's hyperparameters as this trainer sees them, sent with SetDataset for the master's run
 * tracking: named as the {@code paramserver.trainer.*} keys, numbers as numbers. The settings of
 * another optimizer, model or schedule are left out (adam's betas only for adam and adamw).
 */
final class TrainingHyperparameters {
  private TrainingHyperparameters() {}

  static Map<String, Value> of(TrainerProperties props) {
    Map<String, Value> m = new LinkedHashMap<>();
    ModelType model = props.model().model();
    m.put("model", text(model.id()));
    if (model == ModelType.MLP) {
      m.put(
          "hidden",
          text(
              props.model().hidden().stream()
                  .map(String::valueOf)
                  .collect(Collectors.joining(","))));
      m.put("activation", text(props.model().activation().name().toLowerCase(Locale.ROOT)));
    }
    if (model == ModelType.SPARSE_LR) {
      m.put("embedding-width", number(props.model().embeddingWidth()));
    }
    m.put("batch-size", number(props.data().batchSize()));
    m.put(
        "mode",
        text(props.communication().mode().name().toLowerCase(Locale.ROOT).replace('_', '-')));
    if (props.communication().mode() == TrainingModeSetting.BOUNDED_STALENESS) {
      m.put("staleness", number(props.communication().staleness()));
    }
    OptimizerProperties o = props.optimizer();
    m.put("optimizer", text(o.optimizer().id()));
    m.put("learning-rate", number(o.learningRate()));
    if (o.optimizer() == OptimizerKind.MOMENTUM
        || o.optimizer() == OptimizerKind.NESTEROV
        || o.momentum() > 0) {
      m.put("momentum", number(o.momentum()));
    }
    m.put("weight-decay", number(o.weightDecay()));
    if (o.optimizer() == OptimizerKind.ADAM || o.optimizer() == OptimizerKind.ADAMW) {
      m.put("beta1", number(o.beta1()));
      m.put("beta2", number(o.beta2()));
    }
    if (o.epsilon() != null) {
      m.put("epsilon", number(o.epsilon()));
    }
    if (o.rho() != null) {
      m.put("rho", number(o.rho()));
    }
    m.put("accumulate", number(o.accumulate()));
    m.put("clip-value", number(o.clipValue()));
    m.put("clip-norm", number(o.clipNorm()));
    m.put("lr-schedule", text(o.lrSchedule().name().toLowerCase(Locale.ROOT).replace('_', '-')));
    if (o.lrSchedule() == LrScheduleKind.STEP) {
      m.put("lr-step-size", number(o.lrStepSize()));
    }
    if (o.lrSchedule() == LrScheduleKind.STEP || o.lrSchedule() == LrScheduleKind.EXPONENTIAL) {
      m.put("lr-gamma", number(o.lrGamma()));
    }
    if (o.lrSchedule() == LrScheduleKind.WARMUP_COSINE
        || o.lrSchedule() == LrScheduleKind.WARMUP_LINEAR) {
      m.put("lr-warmup-steps", number(o.lrWarmupSteps()));
      m.put("lr-total-steps", number(o.lrTotalSteps()));
      m.put("lr-min", number(o.lrMin()));
    }
    if (o.sparse().optimizer() != null) {
      m.put("sparse.optimizer", text(o.sparse().optimizer().id()));
    }
    if (o.sparse().learningRate() != null) {
      m.put("sparse.learning-rate", number(o.sparse().learningRate()));
    }
    return m;
  }

  private static Value text(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  /** A float setting as the decimal it was written as (0.1, not 0.10000000149011612). */
  private static Value number(float f) {
    return Value.newBuilder().setNumberValue(Double.parseDouble(Float.toString(f))).build();
  }

  private static Value number(long n) {
    return Value.newBuilder().setNumberValue(n).build();
  }
}
