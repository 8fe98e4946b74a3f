package dev.paramserver.bench.report;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * What a JFR recording says about where time and allocation went: Java execution samples by top
 * frame (self) and by project method on the stack (inclusive), native samples by top frame, the
 * heaviest allocation sites, and garbage-collection pauses.
 */
public final class JfrSummary {
  private final Map<String, Long> self = new HashMap<>();
  private final Map<String, Long> inclusive = new HashMap<>();
  private final Map<String, Long> category = new HashMap<>();
  private final Map<String, Long> nativeTop = new HashMap<>();
  private final Map<String, Long> allocation = new HashMap<>();
  private long samples;
  private long nativeSamples;
  private long allocationBytes;
  private long gcCount;
  private Duration gcPause = Duration.ZERO;
  private Duration span = Duration.ZERO;

  private JfrSummary() {}

  public static JfrSummary read(Path file) throws IOException {
    JfrSummary s = new JfrSummary();
    Instant first = null;
    Instant last = null;
    for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
      if (first == null || e.getStartTime().isBefore(first)) {
        first = e.getStartTime();
      }
      if (last == null || e.getEndTime().isAfter(last)) {
        last = e.getEndTime();
      }
      String type = e.getEventType().getName();
      switch (type) {
        case "jdk.ExecutionSample" -> s.execution(e.getStackTrace());
        case "jdk.NativeMethodSample" -> {
          s.nativeSamples++;
          s.nativeTop.merge(top(e.getStackTrace()), 1L, Long::sum);
        }
        case "jdk.ObjectAllocationSample" -> {
          long w = e.getLong("weight");
          s.allocationBytes += w;
          s.allocation.merge(allocationSite(e.getStackTrace()), w, Long::sum);
        }
        case "jdk.GarbageCollection" -> {
          s.gcCount++;
          s.gcPause = s.gcPause.plus(e.getDuration("sumOfPauses"));
        }
        default -> {}
      }
    }
    if (first != null) {
      s.span = Duration.between(first, last);
    }
    return s;
  }

  private void execution(RecordedStackTrace st) {
    samples++;
    self.merge(top(st), 1L, Long::sum);
    category.merge(category(st), 1L, Long::sum);
    if (st == null) {
      return;
    }
    Set<String> seen = new HashSet<>();
    for (RecordedFrame f : st.getFrames()) {
      if (!f.isJavaFrame()) {
        continue;
      }
      String m = method(f);
      if (m.startsWith("dev.paramserver.") && seen.add(m)) {
        inclusive.merge(m, 1L, Long::sum);
      }
    }
  }

  private static String top(RecordedStackTrace st) {
    if (st == null || st.getFrames().isEmpty()) {
      return "(no stack)";
    }
    return method(st.getFrames().get(0));
  }

  /** The first frame outside the JDK's allocation helpers (Arrays.copyOf, ByteBuffer...). */
  private static String allocationSite(RecordedStackTrace st) {
    if (st == null || st.getFrames().isEmpty()) {
      return "(no stack)";
    }
    for (RecordedFrame f : st.getFrames()) {
      String m = method(f);
      if (!m.startsWith("java.") && !m.startsWith("jdk.") && !m.startsWith("sun.")) {
        return m;
      }
    }
    return method(st.getFrames().get(0));
  }

  private static String method(RecordedFrame f) {
    return f.getMethod().getType().getName() + "." + f.getMethod().getName();
  }

  /** What kind of work the sample's top frame does. */
  static String category(RecordedStackTrace st) {
    if (st == null || st.getFrames().isEmpty()) {
      return "other";
    }
    String m = method(st.getFrames().get(0));
    if (m.startsWith("dev.paramserver.optimizers")) {
      return "optimizer arithmetic";
    }
    if (m.startsWith("dev.paramserver.tensor") || m.startsWith("java.nio.")) {
      return "tensor encode/decode (ByteBuffer)";
    }
    if (m.startsWith("dev.paramserver")) {
      return "paramserver (other)";
    }
    if (m.startsWith("com.google.protobuf")) {
      return "protobuf (parse/serialise, byte copies)";
    }
    if (m.contains(".netty.")) {
      return "netty transport";
    }
    if (m.startsWith("io.grpc")) {
      return "grpc-java";
    }
    if (m.startsWith("io.micrometer") || m.startsWith("org.springframework.grpc")) {
      return "metrics/interceptors";
    }
    if (m.startsWith("java.lang.System.arraycopy")
        || m.startsWith("jdk.internal.misc.Unsafe")
        || m.startsWith("java.util.Arrays")) {
      return "memory copy (arraycopy/Unsafe)";
    }
    if (m.startsWith("java.util.concurrent") || m.startsWith("java.lang.Thread")) {
      return "threads/locks";
    }
    return "other JDK/libraries";
  }

  private static List<Map.Entry<String, Long>> topN(Map<String, Long> m, int n) {
    List<Map.Entry<String, Long>> l = new ArrayList<>(m.entrySet());
    l.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
    return l.subList(0, Math.min(n, l.size()));
  }

  private static String pct(long part, long whole) {
    return whole == 0 ? "0%" : String.format(Locale.ROOT, "%.1f%%", 100.0 * part / whole);
  }

  /** Markdown lines describing the recording. */
  public List<String> markdown(String title) {
    List<String> out = new ArrayList<>();
    out.add("### " + title);
    out.add("");
    out.add(
        String.format(
            Locale.ROOT,
            "%d Java execution samples, %d native samples over %.0f s; GC: %d collections, %d ms"
                + " paused; sampled allocation %.1f GB.",
            samples,
            nativeSamples,
            span.toMillis() / 1000.0,
            gcCount,
            gcPause.toMillis(),
            allocationBytes / 1e9));
    out.add("");
    out.add("| work (top frame) | samples |\n| --- | ---: |");
    for (var e : topN(category, 10)) {
      out.add("| " + e.getKey() + " | " + pct(e.getValue(), samples) + " |");
    }
    out.add("");
    out.add("| hottest methods (self) | samples |\n| --- | ---: |");
    for (var e : topN(self, 10)) {
      out.add("| `" + e.getKey() + "` | " + pct(e.getValue(), samples) + " |");
    }
    out.add("");
    out.add("| paramserver methods on the stack (inclusive) | samples |\n| --- | ---: |");
    for (var e : topN(inclusive, 8)) {
      out.add("| `" + e.getKey() + "` | " + pct(e.getValue(), samples) + " |");
    }
    out.add("");
    out.add("| allocation sites (sampled bytes) | share |\n| --- | ---: |");
    for (var e : topN(allocation, 6)) {
      out.add("| `" + e.getKey() + "` | " + pct(e.getValue(), allocationBytes) + " |");
    }
    out.add("");
    return out;
  }

  public Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("executionSamples", samples);
    m.put("nativeSamples", nativeSamples);
    m.put("gcCount", gcCount);
    m.put("gcPauseMs", gcPause.toMillis());
    m.put("allocationBytesSampled", allocationBytes);
    m.put("categories", asMap(topN(category, 20)));
    m.put("selfTop", asMap(topN(self, 20)));
    m.put("inclusiveTop", asMap(topN(inclusive, 20)));
    m.put("nativeTop", asMap(topN(nativeTop, 10)));
    m.put("allocationTop", asMap(topN(allocation, 10)));
    return m;
  }

  private static Map<String, Long> asMap(List<Map.Entry<String, Long>> l) {
    Map<String, Long> m = new LinkedHashMap<>();
    l.forEach(e -> m.put(e.getKey(), e.getValue()));
    return m;
  }
}
