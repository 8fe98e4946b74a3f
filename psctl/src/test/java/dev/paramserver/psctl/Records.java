package dev.paramserver.psctl;

import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.RecordReader;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Reads Example records back for assertions. */
public final class Records {
  private Records() {}

  public static List<Example> examples(Path file) throws IOException {
    List<Example> out = new ArrayList<>();
    RecordReader.forEach(file, r -> out.add(Example.parseFrom(r)));
    return out;
  }
}
