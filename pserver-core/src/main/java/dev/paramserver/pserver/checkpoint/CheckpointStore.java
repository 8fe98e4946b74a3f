package dev.paramserver.pserver.checkpoint;

import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardRestore;
import dev.paramserver.storage.Location;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import java.util.zip.CheckedOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pserver checkpoint files and the pointer to each shard's newest ({@link CheckpointPointers}: in
 * etcd, {@code checkpoints/<idx>}). A checkpoint is written to a temporary file, fsynced and
 * renamed into place; its CRC-32 and path are then compare-and-swapped into the pointer, and only
 * after that is the checkpoint before the previous one deleted: the previous one stays as a
 * fallback should the newest prove unreadable.
 *
 * <p>In an S3-compatible store ({@code s3://bucket/prefix}), which has no rename, the checkpoint is
 * staged in a local temporary file and uploaded with one PUT under a new, unique key (an object
 * appears whole or not at all); the pointer to it is the same etcd compare-and-swap, made only
 * after the upload succeeded. Loading streams the object and checks its CRC as locally.
 */
public final class CheckpointStore {
  private static final Logger log = LoggerFactory.getLogger(CheckpointStore.class);

  private final CheckpointPointers pointers;
  private final Path dir;
  private final Location remote;
  private final Storage storage;

  /** A store of local checkpoint files in {@code dir}. */
  public CheckpointStore(CheckpointPointers pointers, Path dir) {
    this(pointers, dir.toString(), Storage.create(S3Settings.defaults(), "paramserver.pserver.s3"));
  }

  /**
   * @param dir a local directory or an {@code s3://bucket/prefix} URI
   * @param storage reaches the object store (and deletes, reads local files)
   */
  public CheckpointStore(CheckpointPointers pointers, String dir, Storage storage) {
    this.pointers = pointers;
    this.storage = storage;
    Location loc = Location.parse(dir);
    this.remote = loc.isS3() ? loc : null;
    this.dir = loc.isS3() ? null : loc.path().toAbsolutePath().normalize();
  }

  /**
   * A checkpoint read back, with the metadata of the file it came from ({@code checkpoint} is its
   * header only when it was streamed into a {@link Restorer}).
   */
  public record Loaded(ShardCheckpoint checkpoint, String path, long crc32, boolean fallback) {}

  /**
   * Writes {@code checkpoint} as the newest checkpoint of shard {@code index}.
   *
   * @return the metadata now stored in etcd
   * @throws IllegalStateException if the pointer changed under us (the new file is deleted)
   */
  public CheckpointMeta write(int index, ShardCheckpoint checkpoint) {
    return write(
        index,
        out -> {
          checkpoint.writeTo(out);
          return checkpoint.getStep();
        });
  }

  /** Writes a serialised {@link ShardCheckpoint} to a stream; returns the step it records. */
  public interface CheckpointBody {
    long writeTo(OutputStream out) throws IOException;
  }

  /**
   * Writes the checkpoint {@code body} streams (never held in memory as a whole) as the newest
   * checkpoint of shard {@code index}.
   *
   * @return the metadata now stored in etcd
   * @throws IllegalStateException if the pointer changed under us (the new file is deleted)
   */
  public synchronized CheckpointMeta write(int index, CheckpointBody body) {
    String uuid = UUID.randomUUID().toString();
    Written w = writeBody(index, uuid, body);
    String file = w.file();
    long crc = w.crc();
    long step = w.step();
    Optional<CheckpointPointers.Pointer> current = pointers.read(index);
    CheckpointMeta old = current.map(CheckpointPointers.Pointer::meta).orElse(null);
    CheckpointMeta.Builder meta =
        CheckpointMeta.newBuilder()
            .setUuid(uuid)
            .setPath(file)
            .setCrc32((int) crc)
            .setTimestampMs(System.currentTimeMillis())
            .setStep(step);
    if (old != null && !old.getPath().isEmpty()) {
      meta.setPreviousPath(old.getPath()).setPreviousCrc32(old.getCrc32());
    }
    CheckpointMeta written = meta.build();
    long revision = current.map(CheckpointPointers.Pointer::version).orElse(0L);
    if (!pointers.replace(index, revision, written)) {
      deleteQuietly(file);
      throw new IllegalStateException(
          pointers.where(index)
              + " changed while checkpoint "
              + file
              + " was written: another process writes"
              + " checkpoints of pserver "
              + index);
    }
    // Only now is the file before the previous one no longer referenced.
    if (old != null
        && !old.getPreviousPath().isEmpty()
        && !old.getPreviousPath().equals(written.getPreviousPath())
        && !old.getPreviousPath().equals(written.getPath())) {
      deleteQuietly(old.getPreviousPath());
    }
    log.info(
        "checkpoint of pserver {} at step {} written to {} (crc32 {})",
        index,
        step,
        file,
        Long.toHexString(crc));
    return written;
  }

  /**
   * Writes a checkpoint file of shard {@code index} (durably, as {@link #write(int,
   * CheckpointBody)} does) that is not the shard's newest checkpoint: its metadata is returned, not
   * stored in etcd (job-wide checkpoints keep it under their own keys). Its name carries {@code
   * tag}.
   */
  public CheckpointMeta writeFile(int index, String tag, CheckpointBody body) {
    String uuid = UUID.randomUUID().toString();
    Written w = writeBody(index, tag + "-" + uuid, body);
    return CheckpointMeta.newBuilder()
        .setUuid(uuid)
        .setPath(w.file())
        .setCrc32((int) w.crc())
        .setTimestampMs(System.currentTimeMillis())
        .setStep(w.step())
        .build();
  }

  /**
   * Loads the checkpoint file {@code meta} names into {@code restorer}, checking its CRC.
   *
   * @throws IOException when the file is missing, unreadable or corrupt (nothing was installed)
   */
  public Loaded loadFile(CheckpointMeta meta, Restorer restorer) throws IOException {
    return loadFile(meta.getPath(), meta.getCrc32(), restorer, false);
  }

  /** Deletes a checkpoint file, logging (not throwing) a failure. */
  public void deleteFile(String path) {
    deleteQuietly(path);
  }

  /** Writes a checkpoint file (locally or uploaded) whose name ends with {@code name}. */
  private Written writeBody(int index, String name, CheckpointBody body) {
    try {
      return remote != null ? upload(index, name, body) : writeLocal(index, name, body);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot write checkpoint of pserver "
              + index
              + " to "
              + (remote != null ? remote : dir)
              + ": "
              + e.getMessage(),
          e);
    }
  }

  /** A checkpoint written: where, its CRC-32 and the step it records. */
  private record Written(String file, long crc, long step) {}

  private Written writeLocal(int index, String uuid, CheckpointBody body) throws IOException {
    Files.createDirectories(dir);
    Path tmp = dir.resolve(".tmp-ps-" + index + "-" + uuid + ".ckpt");
    CRC32 sum = new CRC32();
    long step = writeDurably(tmp, sum, body);
    Path file = dir.resolve("ps-" + index + "-step" + step + "-" + uuid + ".ckpt");
    moveIntoPlace(tmp, file);
    return new Written(file.toString(), sum.getValue(), step);
  }

  /**
   * Stages the checkpoint in a local temporary file, then uploads it under a key no other
   * checkpoint uses: an object store has no rename, but a PUT makes the object appear whole.
   */
  private Written upload(int index, String uuid, CheckpointBody body) throws IOException {
    Path tmp =
        Path.of(System.getProperty("java.io.tmpdir"), ".tmp-ps-" + index + "-" + uuid + ".ckpt");
    try {
      CRC32 sum = new CRC32();
      long step = writeDurably(tmp, sum, body);
      String file = remote.resolve("ps-" + index + "-step" + step + "-" + uuid + ".ckpt").text();
      storage.upload(tmp, file);
      return new Written(file, sum.getValue(), step);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static long writeDurably(Path tmp, CRC32 crc, CheckpointBody body) throws IOException {
    long step;
    try (FileChannel channel =
        FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      OutputStream out =
          new CheckedOutputStream(
              new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16), crc);
      step = body.writeTo(out);
      out.flush();
      channel.force(true);
    } catch (IOException | RuntimeException e) {
      deleteTemp(tmp);
      throw e;
    }
    return step;
  }

  private static void moveIntoPlace(Path tmp, Path file) throws IOException {
    try {
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      deleteTemp(tmp);
      throw e;
    }
    syncDirectory(file.getParent());
  }

  private static void syncDirectory(Path dir) {
    // Makes the rename durable; not every platform lets a directory be opened, which is harmless.
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      log.debug("cannot fsync directory {}: {}", dir, e.toString());
    }
  }

  /** Streams a checkpoint into {@code shard} (see {@link ParameterShard#beginRestore}). */
  public static Restorer restorer(ParameterShard shard) {
    ShardRestore restore = shard.beginRestore();
    return new Restorer() {
      @Override
      public void table(ShardCheckpoint headerSoFar, SparseTableCheckpoint table) {
        restore.table(headerSoFar, table);
      }

      @Override
      public void install(ShardCheckpoint header) {
        restore.install(header);
      }

      @Override
      public void discard() {
        restore.discard();
      }
    };
  }

  /**
   * Receives a checkpoint as it is read: each sparse-table entry as soon as it is parsed, then,
   * once the whole file is read and its CRC checked, everything else. A restorer that throws makes
   * the file count as unreadable.
   */
  public interface Restorer {
    /**
     * One sparse-table entry.
     *
     * @param headerSoFar the fields read before it (the parameter definitions among them)
     */
    void table(ShardCheckpoint headerSoFar, SparseTableCheckpoint table);

    /** The file is whole: every field but the table entries, to install with them. */
    void install(ShardCheckpoint header);

    /** The file proved unreadable: drop what was received. */
    void discard();
  }

  /**
   * Loads the newest readable checkpoint of shard {@code index} into a restorer from {@code
   * restorers} (a new one per file tried): the current one, or the previous one (with a loud
   * warning) when the current file is missing, corrupt or refused by its restorer.
   *
   * @return the file loaded, with its header ({@link Loaded#checkpoint} without the table rows);
   *     empty when there is no readable checkpoint (nothing was installed)
   */
  public Optional<Loaded> load(int index, Supplier<Restorer> restorers) {
    Optional<CheckpointPointers.Pointer> pointer = pointers.read(index);
    if (pointer.isEmpty()) {
      log.info(
          "no checkpoint of pserver {} in etcd ({}): starting uninitialised",
          index,
          pointers.where(index));
      return Optional.empty();
    }
    CheckpointMeta meta = pointer.get().meta();
    try {
      return Optional.of(loadFile(meta.getPath(), meta.getCrc32(), restorers.get(), false));
    } catch (IOException | RuntimeException e) {
      log.warn(
          "!!! CHECKPOINT OF PSERVER {} AT STEP {} IS UNREADABLE ({}): {} -- falling back to the"
              + " previous checkpoint {}",
          index,
          meta.getStep(),
          meta.getPath(),
          e.getMessage(),
          meta.getPreviousPath().isEmpty() ? "(none)" : meta.getPreviousPath());
    }
    if (meta.getPreviousPath().isEmpty()) {
      log.error("pserver {} has no readable checkpoint: starting uninitialised", index);
      return Optional.empty();
    }
    try {
      Loaded previous =
          loadFile(meta.getPreviousPath(), meta.getPreviousCrc32(), restorers.get(), true);
      log.warn(
          "!!! pserver {} recovered from the PREVIOUS checkpoint {} at step {}: updates after it"
              + " are lost",
          index,
          meta.getPreviousPath(),
          previous.checkpoint().getStep());
      return Optional.of(previous);
    } catch (IOException | RuntimeException e) {
      log.error(
          "previous checkpoint {} of pserver {} is unreadable too ({}): starting uninitialised",
          meta.getPreviousPath(),
          index,
          e.getMessage());
      return Optional.empty();
    }
  }

  /**
   * The newest readable checkpoint of shard {@code index}, whole in memory (small shards, tools and
   * tests): see {@link #load(int, Supplier)}.
   */
  public Optional<Loaded> load(int index) {
    CheckpointReader.Whole[] last = {null};
    Optional<Loaded> loaded =
        load(
            index,
            () -> {
              last[0] = new CheckpointReader.Whole();
              return last[0];
            });
    return loaded.map(l -> new Loaded(last[0].checkpoint(), l.path(), l.crc32(), l.fallback()));
  }

  private Loaded loadFile(String path, int crc, Restorer restorer, boolean fallback)
      throws IOException {
    try {
      ShardCheckpoint header;
      try (InputStream in = storage.openStream(path)) {
        header = CheckpointReader.read(in, path, crc, restorer);
      }
      restorer.install(header);
      return new Loaded(header, path, Integer.toUnsignedLong(crc), fallback);
    } catch (IOException | RuntimeException e) {
      restorer.discard();
      throw e;
    }
  }

  /** Reads a whole checkpoint file into memory, checking its CRC-32 (tools and tests). */
  public static ShardCheckpoint read(String path, int expectedCrc) throws IOException {
    return CheckpointReader.read(path, expectedCrc);
  }

  /** See {@link CheckpointReader}. */
  public static ShardCheckpoint read(String path, int expectedCrc, Restorer restorer)
      throws IOException {
    return CheckpointReader.read(path, expectedCrc, restorer);
  }

  private static void deleteTemp(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      log.warn("cannot delete {}: {}", p, e.toString());
    }
  }

  private void deleteQuietly(String p) {
    try {
      storage.delete(p);
    } catch (IOException e) {
      log.warn("cannot delete {}: {}", p, e.toString());
    }
  }
}
