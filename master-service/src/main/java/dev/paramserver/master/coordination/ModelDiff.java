package dev.paramserver.master.coordination;

import com.google.protobuf.TextFormat;
import dev.paramserver.proto.v1.JobModel;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.BlockLayout;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The first difference between a trainer's model and the job's, in words: parameters in the job's
 * order (missing, then sparse, shape, dtype, block size, optimizer, initialiser), then parameters
 * the job lacks, then mode and staleness. The order of the parameters does not matter: the
 * placement of blocks does not depend on it.
 */
final class ModelDiff {
  private ModelDiff() {}

  /** What differs first, or empty when the trainer's model is the job's. */
  static Optional<String> first(JobModel here, JobModel job) {
    Map<String, ParameterSpec> mine = byName(here);
    Map<String, ParameterSpec> theirs = byName(job);
    String counts =
        " (the job has "
            + job.getParametersCount()
            + " parameters, this trainer "
            + here.getParametersCount()
            + ")";
    for (ParameterSpec j : job.getParametersList()) {
      ParameterSpec h = mine.get(j.getName());
      if (h == null) {
        return Optional.of("parameter '" + j.getName() + "' is missing" + counts);
      }
      Optional<String> d = differ(h, j);
      if (d.isPresent()) {
        return Optional.of("parameter '" + j.getName() + "': " + d.get());
      }
    }
    for (ParameterSpec h : here.getParametersList()) {
      if (!theirs.containsKey(h.getName())) {
        return Optional.of("parameter '" + h.getName() + "' is not in the job's model" + counts);
      }
    }
    if (here.getMode() != job.getMode()) {
      return Optional.of("mode " + here.getMode() + " here, " + job.getMode() + " in the job");
    }
    if (here.getStaleness() != job.getStaleness()) {
      return Optional.of(
          "staleness " + here.getStaleness() + " here, " + job.getStaleness() + " in the job");
    }
    return Optional.empty();
  }

  private static Optional<String> differ(ParameterSpec h, ParameterSpec j) {
    if (h.getSparse() != j.getSparse()) {
      return Optional.of(kind(h) + " here, " + kind(j) + " in the job");
    }
    if (!h.getShapeList().equals(j.getShapeList())) {
      return Optional.of(
          "shape " + h.getShapeList() + " here, " + j.getShapeList() + " in the job");
    }
    if (h.getDtype() != j.getDtype()) {
      return Optional.of("dtype " + h.getDtype() + " here, " + j.getDtype() + " in the job");
    }
    if (!h.getSparse() && BlockLayout.blockSize(h) != BlockLayout.blockSize(j)) {
      return Optional.of(
          "block_size "
              + BlockLayout.blockSize(h)
              + " here, "
              + BlockLayout.blockSize(j)
              + " in the job");
    }
    if (!h.getOptimizer().equals(j.getOptimizer())) {
      return Optional.of(
          "optimizer {"
              + TextFormat.shortDebugString(h.getOptimizer())
              + "} here, {"
              + TextFormat.shortDebugString(j.getOptimizer())
              + "} in the job");
    }
    if (Float.compare(h.getInitStddev(), j.getInitStddev()) != 0) {
      return Optional.of(
          "init_stddev " + h.getInitStddev() + " here, " + j.getInitStddev() + " in the job");
    }
    return Optional.empty();
  }

  private static String kind(ParameterSpec s) {
    return s.getSparse() ? "sparse" : "dense";
  }

  private static Map<String, ParameterSpec> byName(JobModel m) {
    Map<String, ParameterSpec> out = new LinkedHashMap<>();
    m.getParametersList().forEach(p -> out.putIfAbsent(p.getName(), p));
    return out;
  }
}
