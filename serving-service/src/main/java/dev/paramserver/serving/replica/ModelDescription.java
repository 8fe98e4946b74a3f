package dev.paramserver.serving.replica;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.models.ModelFiles;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * How the job's model predicts, read from etcd ({@code model/description}, a model file without
 * parameters that the job's first trainer records) once it is there, then kept: it never changes
 * for a job.
 */
public final class ModelDescription implements Supplier<ModelFiles.Loaded> {
  private final KeyValueStore kv;
  private final String key;
  private volatile ModelFiles.Loaded known;

  public ModelDescription(KeyValueStore kv, String key) {
    this.kv = kv;
    this.key = key;
  }

  /**
   * @throws ServiceException NO_MODEL while the job has no description (no trainer joined yet, or
   *     its trainers do not reach etcd); BAD_ARGUMENT when it does not describe a model
   */
  @Override
  public ModelFiles.Loaded get() {
    ModelFiles.Loaded k = known;
    if (k != null) {
      return k;
    }
    Optional<KeyValueStore.KeyValue> stored = kv.get(key);
    if (stored.isEmpty()) {
      throw new ServiceException(
          ErrorReason.NO_MODEL,
          "the job has no model description yet ("
              + key
              + " in etcd, recorded by its first trainer that reaches etcd): predictions need"
              + " the model's type; lookups and pulls work without it");
    }
    try {
      k = ModelFiles.read(new ByteArrayInputStream(stored.get().value()), key);
    } catch (IOException e) {
      throw new ServiceException(ErrorReason.BAD_ARGUMENT, e.getMessage());
    }
    known = k;
    return k;
  }
}
