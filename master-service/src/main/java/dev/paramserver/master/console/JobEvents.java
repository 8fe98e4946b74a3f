package dev.paramserver.master.console;

import dev.paramserver.adminapi.JobView;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/** The last events of the job (leader changes, pserver restarts, task failures...), newest last. */
final class JobEvents {
  private final int capacity;
  private final Deque<JobView.Event> events = new ArrayDeque<>();

  JobEvents(int capacity) {
    this.capacity = capacity;
  }

  /** Adds an event: when (ms since the epoch), its kind and a sentence for a person. */
  synchronized void add(long timeMs, String kind, String message) {
    if (events.size() == capacity) {
      events.removeFirst();
    }
    events.addLast(new JobView.Event(timeMs, kind, message));
  }

  synchronized List<JobView.Event> list() {
    return new ArrayList<>(events);
  }
}
