package dev.paramserver.models;

import com.google.protobuf.MessageLite;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/** Writes files so that a reader sees the old content or the whole new one, never a part. */
public final class AtomicFiles {
  private AtomicFiles() {}

  /**
   * Writes the message's bytes to a temp file beside {@code path}, fsyncs it and renames it over
   * {@code path} (creating the directories).
   */
  public static void write(Path path, MessageLite message) throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = Files.createTempFile(dir, path.getFileName().toString(), ".tmp");
    try {
      try (OutputStream out = Files.newOutputStream(tmp)) {
        message.writeTo(out);
      }
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        ch.force(true);
      }
      Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
