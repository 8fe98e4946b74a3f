package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** The last bytes of a service's log, read as UTF-8, for the readers of its exit reasons. */
final class LogTail {
  private LogTail() {}

  /** At most {@code maxBytes} from the end of {@code log}, or null when it cannot be read. */
  static String of(Path log, int maxBytes) {
    try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
      long start = Math.max(0, f.length() - maxBytes);
      byte[] bytes = new byte[(int) (f.length() - start)];
      f.seek(start);
      f.readFully(bytes);
      return new String(bytes, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return null;
    }
  }
}
