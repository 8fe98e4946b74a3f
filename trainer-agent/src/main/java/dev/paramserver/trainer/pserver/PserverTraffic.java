package dev.paramserver.trainer.pserver;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import java.util.function.LongConsumer;
import org.springframework.stereotype.Component;

/**
 * Bytes this trainer sent to and received from the pservers, the pushes each pserver acknowledged,
 * and the pushes it lost (only when it stopped before a pserver acknowledged them).
 */
@Component
public final class PserverTraffic {
  private final AtomicLong bytesPushed = new AtomicLong();
  private final AtomicLong bytesPulled = new AtomicLong();
  private final AtomicLong droppedPushes = new AtomicLong();
  private final AtomicLong duplicatePushes = new AtomicLong();
  private final AtomicLong movedRequests = new AtomicLong();
  private final Map<Integer, AtomicLong> acknowledged = new ConcurrentHashMap<>();
  private volatile IntConsumer newPserverListener = ps -> {};
  private volatile LongConsumer roundTripListener = nanos -> {};
  private volatile LongConsumer movedWaitListener = nanos -> {};

  public long bytesPushed() {
    return bytesPushed.get();
  }

  public long bytesPulled() {
    return bytesPulled.get();
  }

  public long droppedPushes() {
    return droppedPushes.get();
  }

  /**
   * Pushes a pserver answered as duplicates: a retry of a push whose first answer was lost, which
   * the pserver recognised and did not apply again.
   */
  public long duplicatePushes() {
    return duplicatePushes.get();
  }

  /**
   * Pushes and pulls a pserver refused with MOVED (elastic placement), each re-split by the new map
   * and resent in pieces.
   */
  public long movedRequests() {
    return movedRequests.get();
  }

  /**
   * Push requests acknowledged by each pserver index, each counted once however many times it was
   * sent (a retry answered {@code duplicate = true} is the acknowledgement of a request whose first
   * answer was lost). In asynchronous mode a pserver applies each such request once, so its update
   * count equals the sum of these over its trainers.
   */
  public Map<Integer, Long> acknowledgedPushes() {
    Map<Integer, Long> out = new TreeMap<>();
    acknowledged.forEach((ps, n) -> out.put(ps, n.get()));
    return out;
  }

  /** Acknowledged push requests of pserver {@code ps} (0 if none). */
  public long acknowledgedPushes(int ps) {
    AtomicLong n = acknowledged.get(ps);
    return n == null ? 0 : n.get();
  }

  /** Calls {@code listener} with each pserver index the first time it acknowledges a push. */
  public void onNewPserver(IntConsumer listener) {
    this.newPserverListener = listener;
    acknowledged.keySet().forEach(listener::accept);
  }

  /**
   * Calls {@code listener} with the nanoseconds of each streamed push request's round trip, from
   * writing it to the training thread taking its answer in.
   */
  public void onPushRoundTrip(LongConsumer listener) {
    this.roundTripListener = listener;
  }

  void pushRoundTrip(long nanos) {
    roundTripListener.accept(nanos);
  }

  void acknowledged(int ps) {
    AtomicLong n = acknowledged.get(ps);
    if (n == null) {
      AtomicLong fresh = new AtomicLong();
      n = acknowledged.putIfAbsent(ps, fresh);
      if (n == null) {
        n = fresh;
        newPserverListener.accept(ps);
      }
    }
    n.incrementAndGet();
  }

  void movedRequest() {
    movedRequests.incrementAndGet();
  }

  /**
   * Calls {@code listener} with the nanoseconds each request refused with MOVED waited before its
   * pieces could be sent: until the trainer routed by the epoch the answer named (the move's stall,
   * its commit in etcd and the trainer seeing it), or the bounded wait ended.
   */
  public void onMovedWait(LongConsumer listener) {
    movedWaitListener = listener;
  }

  void movedWait(long nanos) {
    movedWaitListener.accept(nanos);
  }

  void duplicatePush() {
    duplicatePushes.incrementAndGet();
  }

  void pushed(long bytes) {
    bytesPushed.addAndGet(bytes);
  }

  void pulled(long bytes) {
    bytesPulled.addAndGet(bytes);
  }

  void droppedPush() {
    droppedPushes.incrementAndGet();
  }
}
