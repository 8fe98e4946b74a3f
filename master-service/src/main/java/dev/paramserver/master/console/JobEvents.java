package dev.paramserver.master.console;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The last events of the job (leader changes, pserver restarts, task failures...), newest last. */
final class JobEvents {
  /** One event: when (ms since the epoch), its kind and a sentence for a person. */
  record Event(long timeMs, String kind, String message) {
    Map<String, Object> toMap() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("time", timeMs);
      m.put("kind", kind);
      m.put("message", message);
      return m;
    }
  }

  private final int capacity;
  private final Deque<Event> events = new ArrayDeque<>();

  JobEvents(int capacity) {
    this.capacity = capacity;
  }

  synchronized void add(long timeMs, String kind, String message) {
    if (events.size() == capacity) {
      events.removeFirst();
    }
    events.addLast(new Event(timeMs, kind, message));
  }

  synchronized List<Event> list() {
    return new ArrayList<>(events);
  }
}
