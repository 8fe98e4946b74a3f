package dev.paramserver.master.state;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.KeyValueStore.KeyValue;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.MasterSnapshot;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's state in etcd, every write fenced on the leadership key (it applies only while that key
 * still exists with the create revision this master won it with).
 *
 * <ul>
 *   <li>{@code master/dataset/<i>}: the compressed {@link DatasetIndex} in parts of at most {@value
 *       #PART_BYTES} bytes, each written in its own transaction (a dataset index may exceed etcd's
 *       1.5 MiB request limit), then {@code master/dataset}: the manifest {@code parts=<k>
 *       bytes=<n> crc32=<c>}, written last, so a dataset without a manifest is incomplete.
 *   <li>{@code master/state/<i>}: the compressed {@link MasterSnapshot}, written in one transaction
 *       per change (parts beyond the new count deleted in the same transaction). The whole snapshot
 *       must stay under {@value #MAX_SNAPSHOT_BYTES} bytes compressed.
 * </ul>
 */
public final class EtcdJobStore implements JobStore {
  static final int PART_BYTES = 1 << 20;
  static final int MAX_SNAPSHOT_BYTES = 1_400_000;
  private static final Logger log = LoggerFactory.getLogger(EtcdJobStore.class);

  private final KeyValueStore kv;
  private final JobKeys keys;
  private volatile Fence fence;
  private int snapshotParts = -1;
  private long datasetRevision;

  /** The leadership a write is fenced on. */
  public record Fence(String key, long createRevision) {}

  public EtcdJobStore(KeyValueStore kv, JobKeys keys) {
    this.kv = kv;
    this.keys = keys;
  }

  /** Fences every following write on this leadership. */
  public void fence(Fence fence) {
    this.fence = fence;
    synchronized (this) {
      snapshotParts = -1; // re-read how many parts are stored
    }
  }

  /** Refuses every write until {@link #fence} is called again. */
  public void clearFence() {
    this.fence = null;
  }

  @Override
  public synchronized Optional<DatasetIndex> loadDataset() {
    Optional<KeyValue> manifest = kv.get(keys.masterDataset());
    if (manifest.isEmpty()) {
      return Optional.empty();
    }
    Map<String, String> m = parseManifest(manifest.get().valueAsString());
    int parts = Integer.parseInt(m.getOrDefault("parts", "-1"));
    // part by part: all of them in one answer could pass gRPC's 4 MiB message cap
    List<byte[]> values = new ArrayList<>(Math.max(0, parts));
    for (int i = 0; i < parts; i++) {
      String key = keys.masterDataset() + "/" + i;
      values.add(
          kv.get(key)
              .orElseThrow(
                  () ->
                      new IllegalStateException(
                          "dataset part " + key + " is missing in etcd; manifest " + m))
              .value());
    }
    byte[] data = SnapshotCodec.join(values);
    CRC32 crc = new CRC32();
    crc.update(data);
    if (data.length != Long.parseLong(m.getOrDefault("bytes", "-1"))
        || crc.getValue() != Long.parseLong(m.getOrDefault("crc32", "-1"))) {
      throw new IllegalStateException(
          "the dataset index in etcd does not match its manifest "
              + m
              + " (got "
              + data.length
              + " bytes, crc32 "
              + crc.getValue()
              + ")");
    }
    datasetRevision = manifest.get().modRevision();
    try {
      return Optional.of(
          DatasetIndex.parseFrom(SnapshotCodec.decompress(data, "the dataset index")));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("the dataset index in etcd is corrupt: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized Optional<MasterSnapshot> loadSnapshot() {
    List<byte[]> values = parts(keys.masterState() + "/");
    snapshotParts = values.size();
    if (values.isEmpty()) {
      return Optional.empty();
    }
    try {
      MasterSnapshot s =
          MasterSnapshot.parseFrom(
              SnapshotCodec.decompress(SnapshotCodec.join(values), "the master snapshot"));
      if (datasetRevision != 0 && s.getDatasetRevision() != datasetRevision) {
        log.warn(
            "the master snapshot goes with dataset revision {} but the dataset is at {}",
            s.getDatasetRevision(),
            datasetRevision);
      }
      return Optional.of(s);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(
          "the master snapshot in etcd is corrupt: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void saveDataset(DatasetIndex index) {
    byte[] data = SnapshotCodec.compress(index.toByteArray());
    List<byte[]> parts = SnapshotCodec.split(data, PART_BYTES);
    for (int i = 0; i < parts.size(); i++) {
      commit(Map.of(keys.masterDataset() + "/" + i, parts.get(i)), List.of(), "dataset part " + i);
    }
    CRC32 crc = new CRC32();
    crc.update(data);
    String manifest =
        "parts=" + parts.size() + " bytes=" + data.length + " crc32=" + crc.getValue();
    commit(
        Map.of(keys.masterDataset(), manifest.getBytes(StandardCharsets.UTF_8)),
        List.of(),
        "dataset manifest");
    datasetRevision = kv.get(keys.masterDataset()).map(KeyValue::modRevision).orElse(0L);
    log.info(
        "saved the dataset index: {} chunks in {} files, {} bytes compressed in {} part(s)",
        index.getFilesList().stream().mapToLong(f -> f.getChunkOffsetsCount()).sum(),
        index.getFilesCount(),
        data.length,
        parts.size());
  }

  @Override
  public synchronized long saveSnapshot(byte[] serializedSnapshot) {
    byte[] data = SnapshotCodec.compress(withDatasetRevision(serializedSnapshot));
    if (data.length > MAX_SNAPSHOT_BYTES) {
      throw new IllegalStateException(
          "the master snapshot is "
              + data.length
              + " bytes compressed, over the "
              + MAX_SNAPSHOT_BYTES
              + " bytes one etcd transaction may carry: use more chunks per task"
              + " (paramserver.master.chunks-per-task)");
    }
    if (snapshotParts < 0) {
      snapshotParts = parts(keys.masterState() + "/").size();
    }
    List<byte[]> parts = SnapshotCodec.split(data, PART_BYTES);
    Map<String, byte[]> puts = new LinkedHashMap<>();
    for (int i = 0; i < parts.size(); i++) {
      puts.put(keys.masterState() + "/" + i, parts.get(i));
    }
    List<String> deletes = new ArrayList<>();
    for (int i = parts.size(); i < snapshotParts; i++) {
      deletes.add(keys.masterState() + "/" + i);
    }
    commit(puts, deletes, "master snapshot");
    snapshotParts = parts.size();
    return data.length;
  }

  /** Appends dataset_revision (a later occurrence of a scalar field wins when parsed). */
  private byte[] withDatasetRevision(byte[] snapshot) {
    if (datasetRevision == 0) {
      return snapshot;
    }
    int field = MasterSnapshot.DATASET_REVISION_FIELD_NUMBER;
    byte[] out =
        Arrays.copyOf(
            snapshot, snapshot.length + CodedOutputStream.computeInt64Size(field, datasetRevision));
    CodedOutputStream c =
        CodedOutputStream.newInstance(out, snapshot.length, out.length - snapshot.length);
    try {
      c.writeInt64(field, datasetRevision);
      c.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("cannot append the dataset revision", e);
    }
    return out;
  }

  private void commit(Map<String, byte[]> puts, List<String> deletes, String what) {
    Fence f = fence;
    if (f == null) {
      throw new FenceLostException("not the leader: the " + what + " was not written");
    }
    boolean applied;
    try {
      applied = kv.commitIfHeld(f.key(), f.createRevision(), puts, deletes);
    } catch (CoordinationException e) {
      throw new FenceLostException(
          "etcd did not confirm the write of the " + what + ": " + e.getMessage(), e);
    }
    if (!applied) {
      throw new FenceLostException(
          "the "
              + what
              + " was refused: leadership key "
              + f.key()
              + " (create revision "
              + f.createRevision()
              + ") is gone, another master may lead");
    }
  }

  private List<byte[]> parts(String prefix) {
    List<KeyValue> found = new ArrayList<>(kv.getPrefix(prefix));
    found.removeIf(k -> !k.key().substring(prefix.length()).matches("\\d+"));
    found.sort(Comparator.comparingInt(k -> Integer.parseInt(k.key().substring(prefix.length()))));
    List<byte[]> out = new ArrayList<>(found.size());
    for (int i = 0; i < found.size(); i++) {
      String expected = prefix + i;
      if (!found.get(i).key().equals(expected)) {
        throw new IllegalStateException(
            "part " + expected + " is missing in etcd (found " + found.get(i).key() + ")");
      }
      out.add(found.get(i).value());
    }
    return out;
  }

  private static Map<String, String> parseManifest(String s) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String kvp : s.trim().split("\\s+")) {
      int eq = kvp.indexOf('=');
      if (eq > 0) {
        m.put(kvp.substring(0, eq), kvp.substring(eq + 1));
      }
    }
    return m;
  }
}
