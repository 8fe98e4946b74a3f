package dev.paramserver.etcd;

import static dev.paramserver.etcd.EtcdCalls.bytes;

import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A watch on a key prefix that survives connection trouble.
 *
 * <p>jetcd resumes a watch by itself after transient errors (etcd restarted, connection lost), from
 * the revision after the last event delivered, so no event is lost or repeated. When jetcd gives up
 * on a watch (a halting error), this class opens it again one second later from that same revision.
 * If the revision was compacted away meanwhile, the watch restarts from the current revision and
 * the events in between are lost: a warning is logged and the {@code onGap} callback runs, so that
 * a listener that must not miss a change re-reads the prefix (as it does on start).
 *
 * <p>The listener runs on jetcd's event thread: it must be quick and must not block on etcd.
 */
final class PrefixWatch implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PrefixWatch.class);

  private final Watch watch;
  private final String prefix;
  private final Consumer<KeyValueStore.WatchEvent> listener;
  private final Runnable onGap;
  private final ScheduledExecutorService scheduler;
  private volatile long nextRevision;
  private volatile boolean closed;
  private Watch.Watcher watcher;

  private PrefixWatch(
      Watch watch,
      String prefix,
      long fromRevision,
      Consumer<KeyValueStore.WatchEvent> listener,
      Runnable onGap,
      ScheduledExecutorService scheduler) {
    this.watch = watch;
    this.prefix = prefix;
    this.nextRevision = fromRevision;
    this.listener = listener;
    this.onGap = onGap;
    this.scheduler = scheduler;
  }

  static PrefixWatch start(
      Watch watch,
      String prefix,
      long fromRevision,
      Consumer<KeyValueStore.WatchEvent> listener,
      Runnable onGap,
      ScheduledExecutorService scheduler) {
    PrefixWatch w = new PrefixWatch(watch, prefix, fromRevision, listener, onGap, scheduler);
    w.open();
    return w;
  }

  private synchronized void open() {
    if (closed) {
      return;
    }
    // requireLeader: a member cut off from its cluster cancels the watch instead of leaving it
    // silent; jetcd then ends it and we reopen it (possibly on another endpoint)
    WatchOption.Builder option = WatchOption.builder().isPrefix(true).withRequireLeader(true);
    if (nextRevision > 0) {
      option.withRevision(nextRevision);
    }
    try {
      watcher =
          watch.watch(
              bytes(prefix),
              option.build(),
              Watch.listener(this::onResponse, this::onError, this::onCompleted));
    } catch (RuntimeException e) {
      log.warn("could not open watch on {}, retrying in 1 s: {}", prefix, e.toString());
      reopenLater();
    }
  }

  private void onResponse(WatchResponse response) {
    for (WatchEvent e : response.getEvents()) {
      KeyValueStore.WatchEvent.Type type =
          switch (e.getEventType()) {
            case PUT -> KeyValueStore.WatchEvent.Type.PUT;
            case DELETE -> KeyValueStore.WatchEvent.Type.DELETE;
            default -> null;
          };
      nextRevision = Math.max(nextRevision, e.getKeyValue().getModRevision() + 1);
      if (type == null || closed) {
        continue;
      }
      try {
        listener.accept(new KeyValueStore.WatchEvent(type, EtcdCalls.toKeyValue(e.getKeyValue())));
      } catch (RuntimeException ex) {
        log.warn("watch listener on {} failed on {}", prefix, e.getKeyValue().getKey(), ex);
      }
    }
  }

  private void onError(Throwable error) {
    if (closed) {
      return;
    }
    if (error instanceof CompactedException) {
      log.warn(
          "watch on {} lost events: revision {} was compacted; restarting from the current"
              + " revision",
          prefix,
          nextRevision);
      nextRevision = 0;
      try {
        onGap.run();
      } catch (RuntimeException e) {
        log.warn("watch on {}: the gap listener failed", prefix, e);
      }
    } else {
      log.debug("watch on {} interrupted: {}", prefix, error.toString());
    }
  }

  private void onCompleted() {
    if (!closed) {
      log.info("watch on {} ended by jetcd, reopening in 1 s", prefix);
      reopenLater();
    }
  }

  private void reopenLater() {
    try {
      scheduler.schedule(this::open, 1, TimeUnit.SECONDS);
    } catch (RejectedExecutionException e) {
      log.debug("not reopening watch on {}: coordinator closed", prefix);
    }
  }

  @Override
  public void close() {
    Watch.Watcher w;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      w = watcher;
    }
    if (w != null) {
      w.close();
    }
  }
}
