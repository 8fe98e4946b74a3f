package dev.paramserver.pserver.wal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * The two disk calls of a write-ahead log on its push path: a write and an fsync. The default is
 * the file channel's own; tests replace it to inject the faults of a full or failing disk (ENOSPC,
 * EIO).
 */
public interface WalDisk {
  /** The file channel's own calls. */
  WalDisk DIRECT = new WalDisk() {};

  /** Writes what remains of {@code buf} to {@code ch}. */
  default void write(FileChannel ch, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      ch.write(buf);
    }
  }

  /** Forces {@code ch}'s content to the disk. */
  default void force(FileChannel ch) throws IOException {
    ch.force(false);
  }
}
