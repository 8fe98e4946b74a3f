package dev.paramserver.master.coordination;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.JobModel;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.BlockLayout;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * The job's model in etcd ({@code model/specs}, a {@link JobModel}, no lease): written once, by the
 * first trainer that joins with a model, with a create-only transaction, so two racing first joins
 * agree on one model; every later model is checked against it.
 */
final class JobModels {
  private final KeyValueStore kv;
  private final String key;
  private volatile JobModel cached;

  JobModels(KeyValueStore kv, String key) {
    this.kv = kv;
    this.key = key;
  }

  /** A model checked against the job's, and whether this call defined it. */
  record Agreed(JobModel model, boolean defined) {}

  /**
   * Defines the job's model as {@code candidate} if it has none, else checks that they are equal.
   *
   * @throws ServiceException MODEL_MISMATCH naming the first difference; BAD_ARGUMENT for a model
   *     that cannot be one (duplicate or empty names, bad shapes)
   */
  Agreed agree(JobModel candidate) {
    validate(candidate);
    Optional<JobModel> job = current();
    if (job.isEmpty()) {
      if (kv.compareAndSwap(key, 0, candidate.toByteArray())) {
        cached = candidate;
        return new Agreed(candidate, true);
      }
      job = current(); // another trainer defined it first
    }
    JobModel model = job.orElseThrow(() -> new IllegalStateException(key + " vanished"));
    Optional<String> diff = ModelDiff.first(candidate, model);
    if (diff.isPresent()) {
      throw new ServiceException(
          ErrorReason.MODEL_MISMATCH,
          "this trainer's model differs from the job's: "
              + diff.get()
              + "; train the job's model (Join with no parameters to get it) or use another job");
    }
    return new Agreed(model, false);
  }

  /** The job's model, or NO_MODEL. */
  JobModel require() {
    return current()
        .orElseThrow(
            () ->
                new ServiceException(
                    ErrorReason.NO_MODEL,
                    "the job has no model yet: the first trainer must Join with its parameters"));
  }

  /** The job's model, if a trainer defined one. */
  Optional<JobModel> current() {
    JobModel m = cached;
    if (m != null) {
      return Optional.of(m);
    }
    Optional<KeyValueStore.KeyValue> stored = kv.get(key);
    if (stored.isEmpty()) {
      return Optional.empty();
    }
    try {
      m = JobModel.parseFrom(stored.get().value());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(key + " does not hold a JobModel: " + e.getMessage(), e);
    }
    cached = m;
    return Optional.of(m);
  }

  /** Forgets the cached model (another leader may have written it meanwhile). */
  void forget() {
    cached = null;
  }

  private static void validate(JobModel m) {
    Set<String> names = new HashSet<>();
    for (ParameterSpec p : m.getParametersList()) {
      if (p.getName().isEmpty() || !names.add(p.getName())) {
        throw bad("parameter names must be unique and non-empty; '" + p.getName() + "' is not");
      }
      if (p.getSparse()) {
        if (p.getShapeCount() != 2 || p.getShape(0) < 0 || p.getShape(1) <= 0) {
          throw bad(
              "sparse table '"
                  + p.getName()
                  + "' needs shape [rows, width] with width > 0 and"
                  + " rows >= 0, got "
                  + p.getShapeList());
        }
        continue;
      }
      try {
        BlockLayout.elements(p.getShapeList());
      } catch (IllegalArgumentException | ArithmeticException e) {
        throw bad("parameter '" + p.getName() + "' has a bad shape: " + e.getMessage());
      }
      if (p.getShapeCount() == 0) {
        throw bad("parameter '" + p.getName() + "' has no shape: send its dimensions");
      }
    }
  }

  private static ServiceException bad(String message) {
    return new ServiceException(ErrorReason.BAD_ARGUMENT, message);
  }
}
