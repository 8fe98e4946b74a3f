package dev.paramserver.trainer.pserver;

import java.util.concurrent.atomic.AtomicLong;
import org.springframework.stereotype.Component;

/** Bytes this trainer sent to and received from the pservers, and the pushes it lost. */
@Component
public final class PserverTraffic {
  private final AtomicLong bytesPushed = new AtomicLong();
  private final AtomicLong bytesPulled = new AtomicLong();
  private final AtomicLong droppedPushes = new AtomicLong();

  public long bytesPushed() {
    return bytesPushed.get();
  }

  public long bytesPulled() {
    return bytesPulled.get();
  }

  public long droppedPushes() {
    return droppedPushes.get();
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
