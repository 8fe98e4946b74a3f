package dev.paramserver.master.tracking;

import com.google.protobuf.Value;
import dev.paramserver.proto.tensorboard.Event;
import dev.paramserver.proto.tensorboard.HParamsPluginData;
import dev.paramserver.proto.tensorboard.SessionEndInfo;
import dev.paramserver.proto.tensorboard.SessionStartInfo;
import dev.paramserver.proto.tensorboard.SessionStatus;
import dev.paramserver.proto.tensorboard.Summary;
import dev.paramserver.proto.tensorboard.SummaryMetadata;
import dev.paramserver.proto.tensorboard.TensorProto;
import dev.paramserver.proto.tensorboard.TensorShapeProto;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Writes a TensorBoard event file ({@code events.out.tfevents.<seconds>.<host>}): records of {@code
 * uint64 length, uint32 masked CRC-32C of the length, data, uint32 masked CRC-32C of the data}
 * (little-endian), each record an {@link Event}; the first says the file version, the others hold
 * scalar summaries or the hparams plugin's session start and end ({@link HParamsPluginData} in the
 * summary metadata of a value tagged {@value #SESSION_START_TAG} or {@value #SESSION_END_TAG}).
 * Every record is flushed at once, so TensorBoard sees curves while the job runs. Not thread-safe.
 */
public final class TensorBoardWriter implements Closeable {
  private static final int MASK_DELTA = 0xa282ead8;
  static final String HPARAMS_PLUGIN = "hparams";
  static final String SESSION_START_TAG = "_hparams_/session_start_info";
  static final String SESSION_END_TAG = "_hparams_/session_end_info";
  private static final int DT_FLOAT = 1;

  private final Path file;
  private final OutputStream out;

  /** Creates a new event file in {@code dir} (created if missing). */
  public TensorBoardWriter(Path dir, String host, long nowMs) throws IOException {
    Files.createDirectories(dir);
    this.file = dir.resolve("events.out.tfevents." + (nowMs / 1000) + "." + host);
    this.out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    write(Event.newBuilder().setWallTime(nowMs / 1000.0).setFileVersion("brain.Event:2").build());
  }

  public Path file() {
    return file;
  }

  /** One event holding a scalar per entry of {@code values} at {@code step}. */
  public void scalars(long step, long wallMs, Map<String, Double> values) throws IOException {
    Summary.Builder s = Summary.newBuilder();
    values.forEach(
        (tag, v) ->
            s.addValue(Summary.Value.newBuilder().setTag(tag).setSimpleValue(v.floatValue())));
    write(Event.newBuilder().setWallTime(wallMs / 1000.0).setStep(step).setSummary(s).build());
  }

  /** The hyperparameters of the run: the hparams plugin's session start. */
  public void hparamsStart(Map<String, Value> hparams, long startMs) throws IOException {
    hparams(
        SESSION_START_TAG,
        HParamsPluginData.newBuilder()
            .setSessionStartInfo(
                SessionStartInfo.newBuilder()
                    .putAllHparams(hparams)
                    .setStartTimeSecs(startMs / 1000.0))
            .build(),
        startMs);
  }

  /** The end of the run (its status is final for TensorBoard): the hparams session end. */
  public void hparamsEnd(boolean succeeded, long endMs) throws IOException {
    hparams(
        SESSION_END_TAG,
        HParamsPluginData.newBuilder()
            .setSessionEndInfo(
                SessionEndInfo.newBuilder()
                    .setStatus(
                        succeeded ? SessionStatus.STATUS_SUCCESS : SessionStatus.STATUS_FAILURE)
                    .setEndTimeSecs(endMs / 1000.0))
            .build(),
        endMs);
  }

  /** A value of plugin "hparams", at step 0, with the empty float tensor TensorBoard writes. */
  private void hparams(String tag, HParamsPluginData data, long wallMs) throws IOException {
    Summary.Value v =
        Summary.Value.newBuilder()
            .setTag(tag)
            .setMetadata(
                SummaryMetadata.newBuilder()
                    .setPluginData(
                        SummaryMetadata.PluginData.newBuilder()
                            .setPluginName(HPARAMS_PLUGIN)
                            .setContent(data.toByteString())))
            .setTensor(
                TensorProto.newBuilder()
                    .setDtype(DT_FLOAT)
                    .setTensorShape(
                        TensorShapeProto.newBuilder()
                            .addDim(TensorShapeProto.Dim.newBuilder().setSize(0))))
            .build();
    write(
        Event.newBuilder()
            .setWallTime(wallMs / 1000.0)
            .setSummary(Summary.newBuilder().addValue(v))
            .build());
  }

  private void write(Event e) throws IOException {
    byte[] data = e.toByteArray();
    ByteBuffer header = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    header.putLong(data.length);
    header.putInt(maskedCrc(header.array(), 0, 8));
    ByteBuffer footer = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
    footer.putInt(maskedCrc(data, 0, data.length));
    out.write(header.array());
    out.write(data);
    out.write(footer.array());
    out.flush();
  }

  /** TensorFlow's masked CRC-32C: rotate right by 15 bits, add a constant. */
  static int maskedCrc(byte[] b, int off, int len) {
    CRC32C crc = new CRC32C();
    crc.update(b, off, len);
    int c = (int) crc.getValue();
    return ((c >>> 15) | (c << 17)) + MASK_DELTA;
  }

  @Override
  public void close() throws IOException {
    out.close();
  }
}
