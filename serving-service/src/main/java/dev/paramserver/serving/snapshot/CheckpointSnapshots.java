package dev.paramserver.serving.snapshot;

import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.pserver.checkpoint.CheckpointPointers;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.serving.replica.Snapshot;
import dev.paramserver.serving.replica.SnapshotSource;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;

/**
 * Loads a job's job-wide checkpoints ({@link JobCheckpointCatalog}): each shard's file, local or
 * {@code s3://}, read and checked (CRC-32) as a pserver restoring it does.
 */
public final class CheckpointSnapshots implements SnapshotSource {
  private final JobCheckpointCatalog catalog;
  private final CheckpointStore files;

  public CheckpointSnapshots(JobCheckpointCatalog catalog, Storage storage) {
    this.catalog = catalog;
    // only loadFile is used: it reads the file a pointer names, never the pointers
    this.files = new CheckpointStore(NO_POINTERS, ".", storage);
  }

  @Override
  public Optional<Snapshot> latest(int shards) {
    return catalog.newest().filter(c -> c.shards() == shards).map(this::load);
  }

  @Override
  public Snapshot checkpoint(long id, int shards) {
    JobCheckpointCatalog.Complete c =
        catalog
            .byId(id)
            .orElseThrow(
                () ->
                    new NoSuchElementException(
                        "job-wide checkpoint "
                            + id
                            + " is not a complete checkpoint of this job (the ids are the keys"
                            + " under checkpoints/job/ in etcd)"));
    if (c.shards() != shards) {
      throw new NoSuchElementException(
          "job-wide checkpoint " + id + " has " + c.shards() + " shards, this model " + shards);
    }
    return load(c);
  }

  private Snapshot load(JobCheckpointCatalog.Complete c) {
    List<ParameterShard> shards = new ArrayList<>(c.shards());
    for (int i = 0; i < c.shards(); i++) {
      CheckpointMeta meta = c.files().get(i);
      ParameterShard s = new ParameterShard(false);
      try {
        files.loadFile(meta, CheckpointStore.restorer(s));
      } catch (IOException e) {
        throw new UncheckedIOException(
            "job-wide checkpoint " + c.id() + ": shard " + i + "'s file " + meta.getPath(), e);
      }
      shards.add(s);
    }
    return new Snapshot("job-wide checkpoint " + c.id() + " at step " + c.step(), c.id(), shards);
  }

  private static final CheckpointPointers NO_POINTERS =
      new CheckpointPointers() {
        @Override
        public Optional<Pointer> read(int index) {
          return Optional.empty();
        }

        @Override
        public boolean replace(int index, long version, CheckpointMeta meta) {
          throw new UnsupportedOperationException("a serving replica writes no checkpoint");
        }

        @Override
        public String where(int index) {
          return "(none: a serving replica only reads job-wide checkpoints)";
        }
      };
}
