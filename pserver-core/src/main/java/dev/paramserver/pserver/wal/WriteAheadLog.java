package dev.paramserver.pserver.wal;

import com.google.protobuf.CodedOutputStream;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.PushLog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The write-ahead log of one shard: files {@code ps-<index>-wal-<segment>.log} in a directory, each
 * a sequence of records framed as {@code uint32 length, uint32 crc32, WalRecord bytes}
 * (little-endian). Records are appended to the newest segment; a checkpoint {@link #cut}s the log
 * (a new segment starts) and, once the checkpoint is safely in etcd, the segments no checkpoint
 * needs any more are deleted ({@link #deleteBefore}). A restarted pserver replays every segment
 * from its checkpoint's onwards ({@link #open}) and then appends to a new segment, never to an old
 * one, so a torn tail (a record cut short by a crash) stays where it was and is skipped.
 *
 * <p>Durability ({@link SyncMode}): NONE writes each record to the operating system before the push
 * is answered (survives a crash of the process, not of the machine); BATCH adds an fsync every
 * {@code batchInterval} in the background (a machine crash loses at most that much of the
 * acknowledged pushes); ALWAYS fsyncs before each answer, concurrent appends sharing one fsync
 * (survives a machine crash with its disk).
 */
public final class WriteAheadLog implements PushLog, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WriteAheadLog.class);
  private static final int FRAME = 8;

  /** Larger records are taken for a torn or corrupt frame. */
  static final int MAX_RECORD = 1 << 30;

  /** A frame buffer larger than this is dropped after its write rather than kept for the next. */
  private static final int KEPT_BUFFER = 64 << 20;

  /** When the log is forced to disk. */
  public enum SyncMode {
    NONE,
    BATCH,
    ALWAYS
  }

  private final Path dir;
  private final SyncMode sync;
  private final Duration batchInterval;
  private ScheduledExecutorService syncer;
  // Guarded by this.
  private int index = -1;
  private long segment;
  private FileChannel channel;
  private long written;
  private ByteBuffer frame;
  // Guarded by forceLock: bytes of the current channel known to be on disk.
  private final Object forceLock = new Object();
  private long forced;
  private FileChannel forcedChannel;
  private volatile WalDisk disk = WalDisk.DIRECT;
  // Set once by the first failed write or fsync: the log is failed for good (as etcd exits on a
  // failed WAL fsync: after EIO the kernel may have dropped the dirty pages, so what was written is
  // not known to be on disk, and writing on would hide it).
  private final Object failLock = new Object();
  private volatile String failure;
  private volatile Consumer<String> onFailure = why -> {};

  public WriteAheadLog(Path dir, SyncMode sync, Duration batchInterval) {
    this.dir = dir.toAbsolutePath().normalize();
    this.sync = sync;
    this.batchInterval = batchInterval;
  }

  /** Replaces the disk calls (tests inject faults with it). */
  public void disk(WalDisk disk) {
    this.disk = disk;
  }

  /**
   * Sets what is told, once, why the log failed (a write or an fsync failed): the pserver stops
   * acknowledging and gives its shard up (see {@code ShardPersistence#onStorageFailure}). Called on
   * the thread that met the failure, possibly under the shard's locks: it must not block.
   */
  public void onFailure(Consumer<String> listener) {
    this.onFailure = listener;
  }

  /** Why the log failed, or null while it works. */
  public String failure() {
    return failure;
  }

  private UncheckedIOException failed(String what, IOException e) {
    String why = what + " of write-ahead log segment " + file(index, segment) + " failed: " + e;
    boolean first;
    synchronized (failLock) {
      first = failure == null;
      if (first) {
        failure = why;
      }
    }
    if (first) {
      log.error("{}: the log is failed, nothing more is acknowledged", why);
      onFailure.accept(why);
    }
    return new UncheckedIOException(why, e);
  }

  /** What a replay read. */
  public record Replayed(int segments, long records, long applied, long tornBytes) {}

  /**
   * Replays the segments of shard {@code index} from {@code fromSegment} on (0: none, the shard has
   * no checkpoint: its old segments are deleted), then starts a new segment to append to.
   *
   * @param apply applies one record; returns false when it was skipped
   */
  public synchronized Replayed open(int index, long fromSegment, Predicate<WalRecord> apply) {
    closeChannel();
    this.index = index;
    List<Long> existing = segments(index);
    int replayedSegments = 0;
    long records = 0;
    long applied = 0;
    long torn = 0;
    if (fromSegment > 0) {
      for (long seg : existing) {
        if (seg < fromSegment) {
          continue;
        }
        SegmentReader.Result r = SegmentReader.read(file(index, seg), apply);
        replayedSegments++;
        records += r.records();
        applied += r.applied();
        torn += r.tornBytes();
      }
    } else {
      for (long seg : existing) {
        delete(file(index, seg));
      }
    }
    long next = Math.max(fromSegment, existing.isEmpty() ? 0 : existing.get(existing.size() - 1));
    startSegment(next + 1);
    startSyncer();
    return new Replayed(replayedSegments, records, applied, torn);
  }

  @Override
  public boolean enabled() {
    return true;
  }

  @Override
  public boolean blocks() {
    return sync == SyncMode.ALWAYS;
  }

  @Override
  public void append(WalRecord record) {
    write(record).awaitDurable();
  }

  @Override
  public Written write(WalRecord record) {
    int size = record.getSerializedSize();
    FileChannel ch;
    long end;
    synchronized (this) {
      if (channel == null) {
        throw new UncheckedIOException(
            new IOException("the write-ahead log is not open (no index claimed yet)"));
      }
      String failed = failure;
      if (failed != null) {
        throw new UncheckedIOException(
            new IOException("the write-ahead log failed (" + failed + "): restart the pserver"));
      }
      // The record is encoded straight into a reused direct buffer behind its frame: no array,
      // and no copy by the JDK from the heap to direct memory on the write.
      ByteBuffer buf = frameBuffer(FRAME + size);
      ByteBuffer body = buf.duplicate();
      body.position(FRAME).limit(FRAME + size);
      CRC32 crc = new CRC32();
      try {
        CodedOutputStream out = CodedOutputStream.newInstance(body);
        record.writeTo(out);
        out.flush();
        out.checkNoSpaceLeft();
        body.flip().position(FRAME);
        crc.update(body);
        buf.putInt(0, size).putInt(4, (int) crc.getValue());
        buf.position(0).limit(FRAME + size);
        disk.write(channel, buf);
      } catch (IOException e) {
        throw failed("a write", e);
      } finally {
        if (buf.capacity() > KEPT_BUFFER) {
          frame = null;
        }
      }
      written += FRAME + size;
      ch = channel;
      end = written;
    }
    return sync == SyncMode.ALWAYS ? () -> force(ch, end) : Written.DURABLE;
  }

  /** The reused frame buffer, at least {@code bytes} long (guarded by this). */
  private ByteBuffer frameBuffer(int bytes) {
    if (frame == null || frame.capacity() < bytes) {
      int capacity = Math.max(bytes, frame == null ? 64 << 10 : frame.capacity() * 2);
      capacity = bytes > KEPT_BUFFER ? bytes : Math.min(capacity, KEPT_BUFFER);
      frame = ByteBuffer.allocateDirect(Math.max(capacity, bytes)).order(ByteOrder.LITTLE_ENDIAN);
    }
    frame.clear();
    return frame;
  }

  /** Forces {@code ch} to disk unless an fsync since {@code end} was written covered it. */
  private void force(FileChannel ch, long end) {
    synchronized (forceLock) {
      if (forced >= end && ch == forcedChannel) {
        return;
      }
      long upTo;
      synchronized (this) {
        upTo = ch == channel ? written : end;
      }
      try {
        disk.force(ch);
      } catch (java.nio.channels.ClosedChannelException e) {
        // closed by a cut, which forced it first
        throw new UncheckedIOException(e);
      } catch (IOException e) {
        throw failed("an fsync", e);
      }
      forcedChannel = ch;
      forced = upTo;
    }
  }

  @Override
  public synchronized long cut() {
    if (channel == null) {
      return 0;
    }
    long next = segment + 1;
    closeChannel();
    startSegment(next);
    return next;
  }

  /** Deletes the segments of the current index below {@code firstNeeded}. */
  public void deleteBefore(long firstNeeded) {
    int idx;
    synchronized (this) {
      idx = index;
    }
    if (idx < 0) {
      return;
    }
    for (long seg : segments(idx)) {
      if (seg < firstNeeded) {
        delete(file(idx, seg));
      }
    }
  }

  /** Whether segments of shard {@code idx} are on disk. */
  public boolean hasSegments(int idx) {
    return !segments(idx).isEmpty();
  }

  /** The directory of the segments. */
  public Path dir() {
    return dir;
  }

  /**
   * Moves the segments of shard {@code index} and its {@link LogEpoch} into {@code
   * superseded-ps-<index>/} of this directory (replacing what an earlier call put there) instead of
   * deleting them: a pserver that becomes a backup keeps its last log for an operator, whose forced
   * takeover may have left records there that the new primary lacks.
   *
   * @return the directory they went to, or null when there was nothing to keep
   */
  public synchronized Path setAside(int index) {
    List<Long> segs = segments(index);
    Path epoch = LogEpoch.file(dir, index);
    if (segs.isEmpty() && !Files.exists(epoch)) {
      return null;
    }
    if (this.index == index) {
      closeChannel();
    }
    Path aside = dir.resolve("superseded-ps-" + index);
    try {
      if (Files.isDirectory(aside)) {
        try (Stream<Path> old = Files.list(aside)) {
          for (Path f : old.toList()) {
            Files.deleteIfExists(f);
          }
        }
      }
      Files.createDirectories(aside);
      for (long seg : segs) {
        Path f = file(index, seg);
        Files.move(f, aside.resolve(f.getFileName()));
      }
      if (Files.exists(epoch)) {
        Files.move(epoch, aside.resolve(epoch.getFileName()));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot set the write-ahead log of shard " + index + " aside in " + aside, e);
    }
    log.info(
        "write-ahead log of shard {} ({} segments) kept in {}: this pserver is a backup now",
        index,
        segs.size(),
        aside);
    return aside;
  }

  /** The segment being appended to (0 before {@link #open}). */
  public synchronized long segment() {
    return channel == null ? 0 : segment;
  }

  public SyncMode syncMode() {
    return sync;
  }

  private void startSegment(long seg) {
    try {
      Files.createDirectories(dir);
      channel =
          FileChannel.open(
              file(index, seg),
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE,
              StandardOpenOption.TRUNCATE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot create write-ahead log segment " + file(index, seg) + ": " + e.getMessage(), e);
    }
    segment = seg;
    written = 0;
  }

  private void closeChannel() {
    FileChannel ch = channel;
    channel = null;
    if (ch == null) {
      return;
    }
    try {
      if (sync != SyncMode.NONE) {
        disk.force(ch);
      }
    } catch (IOException e) {
      failed("the fsync closing a segment", e); // recorded and told; nothing to throw to
    }
    try {
      ch.close();
    } catch (IOException e) {
      log.warn("closing write-ahead log segment {} failed: {}", segment, e.toString());
    }
  }

  private synchronized void startSyncer() {
    if (sync != SyncMode.BATCH || syncer != null) {
      return;
    }
    syncer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "pserver-wal-sync");
              t.setDaemon(true);
              return t;
            });
    long ms = Math.max(1, batchInterval.toMillis());
    syncer.scheduleWithFixedDelay(this::syncBatch, ms, ms, TimeUnit.MILLISECONDS);
  }

  private void syncBatch() {
    FileChannel ch;
    long end;
    synchronized (this) {
      ch = channel;
      end = written;
    }
    if (ch == null) {
      return;
    }
    try {
      force(ch, end);
    } catch (UncheckedIOException e) {
      if (e.getCause() instanceof java.nio.channels.ClosedChannelException) {
        // closed by a cut meanwhile, which forced it: harmless
        log.debug("background fsync of the write-ahead log skipped: {}", e.toString());
      }
      // else failed(): the log is failed and its listener told
    }
  }

  @Override
  public void close() {
    ScheduledExecutorService s;
    synchronized (this) {
      s = syncer;
      syncer = null;
      closeChannel();
    }
    if (s != null) {
      s.shutdownNow();
    }
  }

  private Path file(int idx, long seg) {
    return dir.resolve(String.format("ps-%d-wal-%020d.log", idx, seg));
  }

  /** Segment numbers of shard {@code idx} on disk, ascending. */
  List<Long> segments(int idx) {
    Pattern p = Pattern.compile("ps-" + idx + "-wal-(\\d{20})\\.log");
    List<Long> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (Stream<Path> files = Files.list(dir)) {
      files.forEach(
          f -> {
            Matcher m = p.matcher(f.getFileName().toString());
            if (m.matches()) {
              out.add(Long.parseLong(m.group(1)));
            }
          });
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list write-ahead log segments in " + dir, e);
    }
    out.sort(null);
    return out;
  }

  private static void delete(Path f) {
    try {
      Files.deleteIfExists(f);
    } catch (IOException e) {
      log.warn("cannot delete write-ahead log segment {}: {}", f, e.toString());
    }
  }
}
