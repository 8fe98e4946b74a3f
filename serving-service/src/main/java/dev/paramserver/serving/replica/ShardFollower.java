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
 *
 * <p>Across slot moves ({@link PlacementSwitch}): a record the primary applied under a newer
 * committed placement than the one served ends the stream, and the follower waits until that
 * placement is served (or takes a copy when its shard gained slots); a copy asked for a switch is
 * staged, and the stream resumes after it once the switch is served.
 */
public final class ShardFollower implements Runnable, FollowSource.Sink {
  private static final Logger log = LoggerFactory.getLogger(ShardFollower.class);

  /**
   * How the shard is followed, for status and metrics; {@code lastRefusal} is the reason the
   * primary gave when it last refused the stream ({@link FollowSource.Refused}), "" when none or
   * once a stream delivered again.
   */
  public record Status(
      int index,
      String primary,
      long epoch,
      long sequence,
      boolean connected,
      long copies,
      long lagMs,
      long records,
      String lastRefusal) {}

  private final int index;
  private final ServedModel model;
  private final FollowSource source;
  private final Backoff backoff;
  private final LongSupplier clock;
  private final PlacementSwitch placements;
  private volatile boolean running = true;
  private volatile boolean connected;
  private volatile String primary = "";
  private volatile long lagMs;
  private volatile String lastRefusal = "";
  private final AtomicLong copies = new AtomicLong();
  private final AtomicLong records = new AtomicLong();
  // Owned by the follower's thread.
  private long epoch;
  private boolean wantCopy = true;
  private ByteArrayOutputStream copy;
  // the newest committed placement epoch known when the stream was asked for
  private long askedAt;
  // a record of this placement epoch, newer than the one served, ended the stream; 0: none
  private long heldFor;
  // the copy staged for a placement switch, or null
  private ServedModel.Copy staged;

  public ShardFollower(
      int index,
      ServedModel model,
      FollowSource source,
      Backoff backoff,
      LongSupplier clock,
      PlacementSwitch placements) {
    this.index = index;
    this.model = model;
    this.source = source;
    this.backoff = backoff;
    this.clock = clock;
    this.placements = placements;
  }

  @Override
  public void run() {
    while (running && !Thread.currentThread().isInterrupted()) {
      if (placements.wants(index)) {
        wantCopy = true;
      }
      askedAt = placements.known();
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
      } catch (FollowSource.Refused e) {
        if (!running) {
          return;
        }
        refused(e.getMessage());
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
        if (heldFor > 0 || staged != null) {
          awaitPlacement();
        } else {
          backoff.pause();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /**
   * Waits until the replica serves the placement a held record needs, or the switch this shard's
   * staged copy is for; then resumes after the staged copy if it was installed.
   */
  private void awaitPlacement() throws InterruptedException {
    long epochNeeded = heldFor;
    while (running && !placements.settled(index, epochNeeded)) {
      if (epochNeeded > 0) {
        // a watch event may have been missed: the record proves the epoch was committed
        placements.refresh();
      }
      placements.awaitSettled(index, epochNeeded, 1_000);
    }
    heldFor = 0;
    ServedModel.Copy s = staged;
    staged = null;
    if (s != null) {
      ServedVersion.Position p = model.position(index);
      boolean installed = p.epoch() == s.feedEpoch() && p.sequence() == s.checkpoint().getStep();
      wantCopy = !installed;
      epoch = s.feedEpoch();
    }
  }

  /**
   * A refusal repeats every backoff pause while its cause lasts (a wrong token does not heal): the
   * first one and each change of reason are logged at WARN, repeats at DEBUG.
   */
  private void refused(String reason) {
    if (reason.equals(lastRefusal)) {
      log.debug("following shard {} refused again: {}", index, reason);
    } else {
      log.warn(
          "following shard {} at {} refused ({}): following again after a pause",
          index,
          primary.isEmpty() ? "its primary" : primary,
          reason);
    }
    lastRefusal = reason;
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
    if (!lastRefusal.isEmpty()) {
      lastRefusal = "";
    }
    if (m.hasCopy()) {
      return acceptCopy(m.getEpoch(), m.getCopy());
    }
    if (m.hasRecord()) {
      FollowedRecord r = m.getRecord();
      if (r.getPlacementEpoch() > model.placementEpoch()) {
        // applied under a placement not served yet: it may touch slots that moved here
        heldFor = r.getPlacementEpoch();
        return false;
      }
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
      long cutAt = c.getPlacementEpoch();
      if (cutAt > model.placementEpoch() || placements.wants(index)) {
        ServedModel.Copy offered = new ServedModel.Copy(streamEpoch, checkpoint);
        if (placements.stage(index, offered, cutAt, askedAt)) {
          staged = offered;
          log.info(
              "shard {}: copy at sequence {} staged for placement epoch {}",
              index,
              checkpoint.getStep(),
              cutAt);
        } else {
          wantCopy = true;
        }
        return false;
      }
      if (askedAt < model.placementEpoch()) {
        // asked for before the placement served now was committed: it may lack moved rows
        wantCopy = true;
        return false;
      }
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
        index,
        primary,
        p.epoch(),
        p.sequence(),
        connected,
        copies.get(),
        lagMs,
        records.get(),
        lastRefusal);
  }
}
