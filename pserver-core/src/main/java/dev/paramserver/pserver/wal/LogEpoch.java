package dev.paramserver.pserver.wal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Which primary epoch a shard's write-ahead log belongs to: file {@code ps-<index>-wal.epoch} next
 * to the segments, holding the create revision of the {@code ps/<index>} key under which this
 * pserver last served the shard as its primary. A restarted pserver compares it with the shard's
 * in-sync record in etcd: equal, its log is the newest and the shard waits for it.
 */
public final class LogEpoch {
  private LogEpoch() {}

  static Path file(Path dir, int index) {
    return dir.resolve("ps-" + index + "-wal.epoch");
  }

  /** Writes {@code epoch} for shard {@code index} in {@code dir} (atomically, then fsynced). */
  public static void write(Path dir, int index, long epoch) {
    Path target = file(dir, index);
    Path tmp = dir.resolve(target.getFileName() + ".tmp");
    try {
      Files.createDirectories(dir);
      Files.writeString(tmp, Long.toString(epoch) + "\n", StandardCharsets.UTF_8);
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        ch.force(true);
      }
      try {
        Files.move(
            tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
    }
  }

  /**
   * The epoch written for shard {@code index} in {@code dir}, 0 when none (or unreadable: a log
   * whose epoch is unknown is never taken for the newest).
   */
  public static long read(Path dir, int index) {
    Path f = file(dir, index);
    try {
      if (!Files.isRegularFile(f)) {
        return 0;
      }
      return Long.parseLong(Files.readString(f, StandardCharsets.UTF_8).trim());
    } catch (IOException | NumberFormatException e) {
      return 0;
    }
  }
}
