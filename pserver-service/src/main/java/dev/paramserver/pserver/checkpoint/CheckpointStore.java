package dev.paramserver.pserver.checkpoint;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.WireFormat;
import dev.paramserver.coordination.CoordinationException;
import dev.paramserver.coordination.JobKeys;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import java.util.UUID;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pserver checkpoint files and their metadata in etcd ({@code checkpoints/<idx>}). A checkpoint is
 * written to a temporary file, fsynced and renamed into place; its CRC-32 and path are then
 * compare-and-swapped into etcd, and only after that is the checkpoint before the previous one
 * deleted: the previous one stays as a fallback should the newest prove unreadable.
 */
public final class CheckpointStore {
  private static final Logger log = LoggerFactory.getLogger(CheckpointStore.class);

  private final KeyValueStore kv;
  private final JobKeys keys;
  private final Path dir;

  public CheckpointStore(KeyValueStore kv, JobKeys keys, Path dir) {
    this.kv = kv;
    this.keys = keys;
    this.dir = dir.toAbsolutePath().normalize();
  }

  /** A checkpoint read back, with the metadata of the file it came from. */
  public record Loaded(ShardCheckpoint checkpoint, String path, long crc32, boolean fallback) {}

  /**
   * Writes {@code checkpoint} as the newest checkpoint of shard {@code index}.
   *
   * @return the metadata now stored in etcd
   * @throws CoordinationException if etcd's metadata changed under us (the new file is deleted)
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
   * @throws CoordinationException if etcd's metadata changed under us (the new file is deleted)
   */
  public synchronized CheckpointMeta write(int index, CheckpointBody body) {
    String uuid = UUID.randomUUID().toString();
    Path file;
    long crc;
    long step;
    try {
      Files.createDirectories(dir);
      Path tmp = dir.resolve(".tmp-ps-" + index + "-" + uuid + ".ckpt");
      CRC32 sum = new CRC32();
      step = writeDurably(tmp, sum, body);
      crc = sum.getValue();
      file = dir.resolve("ps-" + index + "-step" + step + "-" + uuid + ".ckpt");
      moveIntoPlace(tmp, file);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot write checkpoint of pserver " + index + " to " + dir + ": " + e.getMessage(), e);
    }
    String key = keys.checkpoint(index);
    Optional<KeyValueStore.KeyValue> current = kv.get(key);
    CheckpointMeta old = current.map(kv -> parseMeta(key, kv.value())).orElse(null);
    CheckpointMeta.Builder meta =
        CheckpointMeta.newBuilder()
            .setUuid(uuid)
            .setPath(file.toString())
            .setCrc32((int) crc)
            .setTimestampMs(System.currentTimeMillis())
            .setStep(step);
    if (old != null && !old.getPath().isEmpty()) {
      meta.setPreviousPath(old.getPath()).setPreviousCrc32(old.getCrc32());
    }
    CheckpointMeta written = meta.build();
    long revision = current.map(KeyValueStore.KeyValue::modRevision).orElse(0L);
    if (!kv.compareAndSwap(key, revision, written.toByteArray())) {
      deleteQuietly(file);
      throw new CoordinationException(
          key
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
      deleteQuietly(Path.of(old.getPreviousPath()));
    }
    log.info(
        "checkpoint of pserver {} at step {} written to {} (crc32 {})",
        index,
        step,
        file,
        Long.toHexString(crc));
    return written;
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
      deleteQuietly(tmp);
      throw e;
    }
    return step;
  }

  private static void moveIntoPlace(Path tmp, Path file) throws IOException {
    try {
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      deleteQuietly(tmp);
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

  /**
   * The newest readable checkpoint of shard {@code index}: the current one, or the previous one
   * (with a loud warning) when the current file is missing or corrupt; empty when there is none.
   */
  public Optional<Loaded> load(int index) {
    String key = keys.checkpoint(index);
    Optional<KeyValueStore.KeyValue> kv0 = kv.get(key);
    if (kv0.isEmpty()) {
      log.info("no checkpoint of pserver {} in etcd ({}): starting uninitialised", index, key);
      return Optional.empty();
    }
    CheckpointMeta meta = parseMeta(key, kv0.get().value());
    try {
      return Optional.of(
          new Loaded(
              read(meta.getPath(), meta.getCrc32()),
              meta.getPath(),
              Integer.toUnsignedLong(meta.getCrc32()),
              false));
    } catch (IOException e) {
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
      ShardCheckpoint previous = read(meta.getPreviousPath(), meta.getPreviousCrc32());
      log.warn(
          "!!! pserver {} recovered from the PREVIOUS checkpoint {} at step {}: updates after it"
              + " are lost",
          index,
          meta.getPreviousPath(),
          previous.getStep());
      return Optional.of(
          new Loaded(
              previous,
              meta.getPreviousPath(),
              Integer.toUnsignedLong(meta.getPreviousCrc32()),
              true));
    } catch (IOException e) {
      log.error(
          "previous checkpoint {} of pserver {} is unreadable too ({}): starting uninitialised",
          meta.getPreviousPath(),
          index,
          e.getMessage());
      return Optional.empty();
    }
  }

  /**
   * Reads a checkpoint file as a stream, one top-level field at a time, computing its CRC-32 as the
   * bytes go by; the CRC is checked once the whole file is read, before anything is returned.
   * Memory holds the parsed checkpoint plus a bounded read buffer, never a copy of the file, so
   * files over 2 GiB load too.
   */
  static ShardCheckpoint read(String path, int expectedCrc) throws IOException {
    CRC32 crc = new CRC32();
    ShardCheckpoint checkpoint;
    try (InputStream file = Files.newInputStream(Path.of(path));
        CheckedInputStream in =
            new CheckedInputStream(new BufferedInputStream(file, READ_BUFFER), crc)) {
      try {
        checkpoint = parseStreamed(CodedInputStream.newInstance(in, READ_BUFFER));
      } catch (InvalidProtocolBufferException e) {
        throw new IOException("file " + path + " is not a ShardCheckpoint: " + e.getMessage(), e);
      }
      // The parser stops at the end of the stream; anything left would be trailing garbage that
      // the CRC still has to cover.
      in.transferTo(OutputStream.nullOutputStream());
    } catch (NoSuchFileException e) {
      throw new IOException("file " + path + " does not exist", e);
    }
    if ((int) crc.getValue() != expectedCrc) {
      throw new IOException(
          "file "
              + path
              + " has CRC-32 "
              + Long.toHexString(crc.getValue())
              + ", expected "
              + Integer.toHexString(expectedCrc));
    }
    return checkpoint;
  }

  private static final int READ_BUFFER = 1 << 16;

  /**
   * Parses a {@link ShardCheckpoint} field by field; the size counter is reset after every
   * top-level field so only one block or table chunk at a time counts against protobuf's limit.
   */
  private static ShardCheckpoint parseStreamed(CodedInputStream in) throws IOException {
    in.setSizeLimit(Integer.MAX_VALUE);
    ExtensionRegistryLite registry = ExtensionRegistryLite.getEmptyRegistry();
    ShardCheckpoint.Builder out = ShardCheckpoint.newBuilder();
    UnknownFieldSet.Builder unknown = UnknownFieldSet.newBuilder();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (WireFormat.getTagFieldNumber(tag)) {
        case ShardCheckpoint.INDEX_FIELD_NUMBER -> out.setIndex(in.readUInt32());
        case ShardCheckpoint.STEP_FIELD_NUMBER -> out.setStep(in.readUInt64());
        case ShardCheckpoint.INIT_ID_FIELD_NUMBER -> out.setInitId(in.readStringRequireUtf8());
        case ShardCheckpoint.CREATED_MS_FIELD_NUMBER -> out.setCreatedMs(in.readInt64());
        case ShardCheckpoint.PARAMETERS_FIELD_NUMBER ->
            out.addParameters(in.readMessage(ParameterSpec.parser(), registry));
        case ShardCheckpoint.BLOCKS_FIELD_NUMBER ->
            out.addBlocks(in.readMessage(BlockCheckpoint.parser(), registry));
        case ShardCheckpoint.SPARSE_TABLES_FIELD_NUMBER ->
            out.addSparseTables(in.readMessage(SparseTableCheckpoint.parser(), registry));
        default -> {
          // Kept, not skipped: fields written as unknown fields (the training mode) must survive.
          if (!unknown.mergeFieldFrom(tag, in)) {
            throw new InvalidProtocolBufferException("unexpected end-group tag " + tag);
          }
        }
      }
      in.resetSizeCounter();
    }
    return out.setUnknownFields(unknown.build()).build();
  }

  private static CheckpointMeta parseMeta(String key, byte[] value) {
    try {
      return CheckpointMeta.parseFrom(value);
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException(key + " does not hold a CheckpointMeta: " + e.getMessage());
    }
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      log.warn("cannot delete {}: {}", p, e.toString());
    }
  }
}
