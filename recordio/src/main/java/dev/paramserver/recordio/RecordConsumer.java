package dev.paramserver.recordio;

import java.io.IOException;

/**
 * Receives records one at a time from {@link RecordReader#forEach(java.nio.file.Path,
 * RecordConsumer)}.
 */
@FunctionalInterface
public interface RecordConsumer {
  void accept(byte[] record) throws IOException;
}
