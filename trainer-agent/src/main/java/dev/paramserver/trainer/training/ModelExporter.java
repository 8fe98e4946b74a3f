package dev.paramserver.trainer.training;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.onnx.OnnxExport;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.storage.Location;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.config.TrainerProperties;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Writes the final model to {@code paramserver.trainer.model-output} and, as ONNX, to {@code
 * paramserver.trainer.onnx-output}: one trainer does, the one that takes the job's export lock
 * under its membership.
 */
@Component
public class ModelExporter {
  private static final Logger log = LoggerFactory.getLogger(ModelExporter.class);

  /** Sparse rows pulled per request while exporting. */
  private static final int ROWS_PER_PULL = 50_000;

  private final TrainerProperties props;

  public ModelExporter(TrainerProperties props) {
    this.props = props;
  }

  /**
   * Writes the model if an output is set and this trainer wins the export lock.
   *
   * @return whether this trainer wrote it
   */
  boolean exportIfElected(TrainingContext ctx) throws IOException {
    String out = blankToNull(props.model().modelOutput());
    String onnx = blankToNull(props.model().onnxOutput());
    if (out == null && onnx == null) {
      return false;
    }
    boolean elected = ctx.membership().locks().claimExport();
    if (!elected) {
      log.info("another trainer writes the final model");
      return false;
    }
    Parameters values = ctx.values();
    ctx.client().pull(values);
    if (!values.sparseNames().isEmpty()) {
      // rows exist only for ids seen in the data: collect them and pull every one
      long[] all = seenIds(ctx.storage());
      for (int i = 0; i < all.length; i += ROWS_PER_PULL) {
        ctx.client()
            .pullRows(values, Arrays.copyOfRange(all, i, Math.min(all.length, i + ROWS_PER_PULL)));
      }
    }
    if (out != null) {
      writeTo(
          ctx.storage(),
          out,
          file ->
              ModelFiles.write(
                  file, ctx.spec(), ctx.model(), values, ctx.membership().job(), ctx.data()));
      log.info("wrote the final model to {}", out);
    }
    if (onnx != null) {
      writeTo(
          ctx.storage(),
          onnx,
          file ->
              OnnxExport.write(
                  file,
                  OnnxExport.build(
                      ctx.spec(), values, ctx.data().getLabelNamesList(), ctx.scaling())));
      log.info("wrote the final model as ONNX to {}", onnx);
    }
    return true;
  }

  /** Writes one file of the model. */
  private interface FileWrite {
    void to(Path file) throws IOException;
  }

  /**
   * Writes {@code out} with {@code write}: a local path directly; an {@code s3://} URI into a local
   * temporary file first, then uploaded whole with one PUT.
   */
  private static void writeTo(Storage storage, String out, FileWrite write) throws IOException {
    if (!Location.isS3(out)) {
      Path file = Path.of(out).toAbsolutePath();
      write.to(file);
      return;
    }
    Location.parse(out); // a malformed URI fails before anything is written
    Path staging = Files.createTempFile("paramserver-model-", ".part");
    try {
      write.to(staging);
      storage.upload(staging, out);
    } finally {
      Files.deleteIfExists(staging);
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private long[] seenIds(Storage storage) throws IOException {
    Set<Long> ids = new TreeSet<>();
    List<String> globs = new ArrayList<>(ModelSpecs.absolute(props.data().requireTrainData()));
    globs.addAll(ModelSpecs.absolute(props.data().testData()));
    for (Example e : Dataset.readGlobs(storage, globs)) {
      ids.addAll(e.getSparseIdsList());
    }
    return ids.stream().mapToLong(Long::longValue).toArray();
  }
}
