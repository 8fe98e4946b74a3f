package dev.paramserver.pserver.wal;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.WalRecord;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Predicate;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads one write-ahead log segment record by record. The first record that is cut short, has a bad
 * length or a bad CRC ends the segment: it and anything after it are a torn tail (a crash in the
 * middle of a write), reported and skipped; no acknowledged push can be in it, because a push is
 * answered only after its record was written whole.
 */
final class SegmentReader {
  private static final Logger log = LoggerFactory.getLogger(SegmentReader.class);

  private SegmentReader() {}

  record Result(long records, long applied, long tornBytes) {}

  static Result read(Path file, Predicate<WalRecord> apply) {
    long size;
    long records = 0;
    long applied = 0;
    long good = 0;
    try (InputStream raw = Files.newInputStream(file);
        DataInputStream in = new DataInputStream(new BufferedInputStream(raw, 1 << 16))) {
      size = Files.size(file);
      while (true) {
        byte[] frame = new byte[8];
        int n = in.readNBytes(frame, 0, 8);
        if (n == 0) {
          break;
        }
        if (n < 8) {
          break;
        }
        int length = littleEndian(frame, 0);
        int crc = littleEndian(frame, 4);
        if (length < 0 || length > WriteAheadLog.MAX_RECORD || good + 8 + length > size) {
          break;
        }
        byte[] body = new byte[length];
        try {
          in.readFully(body);
        } catch (EOFException e) {
          break;
        }
        CRC32 sum = new CRC32();
        sum.update(body);
        if ((int) sum.getValue() != crc) {
          break;
        }
        WalRecord record;
        try {
          record = WalRecord.parseFrom(body);
        } catch (InvalidProtocolBufferException e) {
          break;
        }
        good += 8 + length;
        records++;
        if (apply.test(record)) {
          applied++;
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read write-ahead log segment " + file, e);
    }
    long torn = size - good;
    if (torn > 0) {
      log.warn(
          "write-ahead log segment {} ends with a torn tail of {} bytes after {} good records"
              + " (a crash during a write): skipped",
          file,
          torn,
          records);
    }
    return new Result(records, applied, torn);
  }

  private static int littleEndian(byte[] b, int off) {
    return (b[off] & 0xff)
        | (b[off + 1] & 0xff) << 8
        | (b[off + 2] & 0xff) << 16
        | (b[off + 3] & 0xff) << 24;
  }
}
