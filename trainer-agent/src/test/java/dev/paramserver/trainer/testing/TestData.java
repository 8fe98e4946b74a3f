package dev.paramserver.trainer.testing;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.recordio.RecordWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** Small RecordIO files of a separable two-class problem with two features. */
public final class TestData {
  /** The softmax model the files fit. */
  public static final ModelSpec SPEC =
      new ModelSpec("softmax", 2, 2, List.of(), Mlp.Activation.RELU, 0);

  private TestData() {}

  /** Writes {@code records} examples to {@code file}, {@code perChunk} per chunk. */
  public static List<ChunkInfo> write(Path file, int records, int perChunk) throws IOException {
    try (RecordWriter w = RecordWriter.create(file, Compressor.NONE, perChunk)) {
      for (int i = 0; i < records; i++) {
        int label = i % 2;
        float x = label == 0 ? -1f - (i % 5) * 0.1f : 1f + (i % 5) * 0.1f;
        w.write(
            Example.newBuilder().addDense(x).addDense(-x).setLabel(label).build().toByteArray());
      }
    }
    return RecordIndex.scan(file);
  }
}
