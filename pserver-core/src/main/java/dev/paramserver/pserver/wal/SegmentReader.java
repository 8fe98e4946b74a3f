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
 * Reads one write-ahead log segment record by record. A record cut short by the end of the file, or
 * with a bad length, ends the segment: it and anything after it are a torn tail (a crash in the
 * middle of a write), reported and skipped; no acknowledged push can be in it, because a push is
 * answered only after its record was written whole. A whole record with a bad CRC (or that does not
 * parse) is a torn tail only when nothing follows it; with bytes after it, it is corruption in the
 * middle of the log (as etcd, which repairs only a torn last record): reading stops with a {@link
 * CorruptLogException} naming the file and the offset, rather than dropping the good records after
 * it.
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
        boolean last = good + 8 + length == size;
        if ((int) sum.getValue() != crc) {
          if (last) {
            break;
          }
          throw new CorruptLogException(file, good, records, "its CRC does not match", size);
        }
        WalRecord record;
        try {
          record = WalRecord.parseFrom(body);
        } catch (InvalidProtocolBufferException e) {
          if (last) {
            break;
          }
          throw new CorruptLogException(file, good, records, "it does not parse", size);
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
