package dev.paramserver.recordio;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Bytes read by position: a local file, or an object in an object store read with ranged requests.
 * RecordIO is read through this interface so that indexing (20-byte header reads) and chunk reads
 * never need the whole file.
 */
public interface RangeSource extends Closeable {
  /** The file or object, as users name it (a path or an {@code s3://bucket/key} URI). */
  String name();

  /** Total size in bytes. */
  long size() throws IOException;

  /**
   * Fills {@code dst} with the bytes starting at {@code position}.
   *
   * @throws java.io.EOFException if the source ends before {@code dst} is full
   */
  void readFully(ByteBuffer dst, long position) throws IOException;

  /** Opens a {@link RangeSource} by name (a path or a URI). */
  @FunctionalInterface
  interface Opener {
    RangeSource open(String location) throws IOException;
  }

  /** Opens a local file; a directory is rejected with a clear message. */
  static RangeSource ofFile(Path file) throws IOException {
    if (Files.isDirectory(file)) {
      throw new IOException(file + " is a directory, not a RecordIO file");
    }
    FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
    String name = file.toString();
    return new RangeSource() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public long size() throws IOException {
        return ch.size();
      }

      @Override
      public void readFully(ByteBuffer dst, long position) throws IOException {
        long pos = position;
        while (dst.hasRemaining()) {
          int n = ch.read(dst, pos);
          if (n < 0) {
            throw new java.io.EOFException(name + " ended at offset " + pos);
          }
          pos += n;
        }
      }

      @Override
      public void close() throws IOException {
        ch.close();
      }
    };
  }

  /** Opens local paths only: the opener for plain files. */
  static RangeSource openLocal(String location) throws IOException {
    return ofFile(Path.of(location));
  }
}
