package dev.paramserver.serving.replica;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.proto.v1.FollowedRecord;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.ShardCopyChunk;
import dev.paramserver.rpc.Backoff;
import java.io.ByteArrayOutputStream;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows one shard's primary on a thread of its own: asks to resume after the last record applied
 * (same feed epoch and initialisation), else takes a copy, then applies each record in order.
 * Across a takeover, a pserver restart or a cut-off it follows again, from where it was or from a
 * new copy; a record that does not follow on ends the stream and asks for a copy. What it holds
 * stays served meanwhile.
 */
public final class ShardFollower implements Runnable, FollowSource.Sink {
  private static final Logger log = LoggerFactory.getLogger(ShardFollower.class);

  /** How the shard is followed, for status and metrics. */
  public record Status(
      int index,
      String primary,
      long epoch,
      long sequence,
      boolean connected,
      long copies,
      long lagMs,
      long records) {}

  private final int index;
  private final ServedModel model;
  private final FollowSource source;
  private final Backoff backoff;
  private final LongSupplier clock;
  private volatile boolean running = true;
  private volatile boolean connected;
  private volatile String primary = "";
  private volatile long lagMs;
  private final AtomicLong copies = new AtomicLong();
  private final AtomicLong records = new AtomicLong();
  // Owned by the follower's thread.
  private long epoch;
  private boolean wantCopy = true;
  private ByteArrayOutputStream copy;

  public ShardFollower(
      int index, ServedModel model, FollowSource source, Backoff backoff, LongSupplier clock) {
    this.index = index;
    this.model = model;
    this.source = source;
    this.backoff = backoff;
    this.clock = clock;
  }

  @Override
  public void run() {
    while (running && !Thread.currentThread().isInterrupted()) {
      ServedVersion.Position at = model.position(index);
      FollowRequest request =
          FollowRequest.newBuilder()
              .setIndex(index)
              .setEpoch(wantCopy ? 0 : epoch)
              .setFromSeq(wantCopy ? 0 : at.sequence())
              .setInitId(model.initId(index))
              .build();
      try {
        source.follow(request, this);
        backoff.reset();
      } catch (RuntimeException e) {
        if (!running) {
          return;
        }
        log.info("following shard {} stopped ({}): following again", index, e.getMessage());
      } finally {
        connected = false;
        copy = null;
      }
      try {
        backoff.pause();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  @Override
  public void connected(String primary) {
    this.primary = primary;
    connected = true;
  }

  @Override
  public boolean accept(FollowMessage m) {
    if (!running) {
      // stopped (shutdown, or the replica pinned to a checkpoint): change nothing more
      return false;
    }
    if (m.hasCopy()) {
      return acceptCopy(m.getEpoch(), m.getCopy());
    }
    if (m.hasRecord()) {
      FollowedRecord r = m.getRecord();
      if (!model.apply(index, m.getEpoch(), r.getSequence(), r.getRecord())) {
        log.info(
            "shard {}: record {} of epoch {} does not follow on what this replica holds: taking"
                + " a new copy",
            index,
            r.getSequence(),
            m.getEpoch());
        wantCopy = true;
        return false;
      }
      records.incrementAndGet();
      lagMs = Math.max(0, clock.getAsLong() - r.getAppliedMs());
    }
    return running;
  }

  private boolean acceptCopy(long streamEpoch, ShardCopyChunk c) {
    if (copy == null) {
      copy = new ByteArrayOutputStream();
    }
    copy.writeBytes(c.getData().toByteArray());
    if (!c.getLast()) {
      return running;
    }
    try {
      ShardCheckpoint checkpoint = ShardCheckpoint.parseFrom(copy.toByteArray());
      model.install(index, streamEpoch, checkpoint);
      copies.incrementAndGet();
      epoch = streamEpoch;
      wantCopy = false;
      log.info("shard {}: installed a copy at sequence {}", index, checkpoint.getStep());
      return running;
    } catch (InvalidProtocolBufferException e) {
      log.warn("shard {}: the primary's copy does not parse: taking another", index, e);
      wantCopy = true;
      return false;
    } finally {
      copy = null;
    }
  }

  /** Stops following (the stream ends at its next message or when the source closes). */
  public void stop() {
    running = false;
  }

  public Status status() {
    ServedVersion.Position p = model.position(index);
    return new Status(
        index, primary, p.epoch(), p.sequence(), connected, copies.get(), lagMs, records.get());
  }
}
