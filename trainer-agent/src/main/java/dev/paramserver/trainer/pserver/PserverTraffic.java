package dev.paramserver.trainer.pserver;

import java.util.concurrent.atomic.AtomicLong;
import org.springframework.stereotype.Component;

/**
 * Bytes this trainer sent to and received from the pservers, and the pushes it lost (only when it
 * stopped before a pserver acknowledged them).
 */
@Component
public final class PserverTraffic {
  private final AtomicLong bytesPushed = new AtomicLong();
  private final AtomicLong bytesPulled = new AtomicLong();
  private final AtomicLong droppedPushes = new AtomicLong();
  private final AtomicLong duplicatePushes = new AtomicLong();

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
