package dev.paramserver.bench.serving;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Stop-the-world collector pauses of a process, counted between two readings: of a service from its
 * {@code /actuator/prometheus} ({@code jvm_gc_pause_seconds}, which Micrometer fills from the
 * collectors' pause notifications: concurrent cycles are not in it), or of this JVM from its
 * collector beans (which count a concurrent collector's cycles as time too: read them for the
 * serial and parallel collectors the bench runs on).
 */
final class GcPauses {
  private static final Pattern LINE =
      Pattern.compile("^jvm_gc_pause_seconds_(count|sum)\\{[^}]*\\}\\s+([0-9.eE+-]+)$");

  /** Pauses and their total seconds since the process started. */
  record Reading(long pauses, double seconds) {
    Reading since(Reading before) {
      return new Reading(pauses - before.pauses, seconds - before.seconds);
    }

    double meanMs() {
      return pauses == 0 ? 0 : seconds * 1000 / pauses;
    }
  }

  private GcPauses() {}

  /** The pauses of the service whose HTTP port is {@code httpPort}; zero when unreadable. */
  static Reading ofService(int httpPort) throws InterruptedException {
    try {
      HttpResponse<String> resp =
          HttpClient.newBuilder()
              .connectTimeout(Duration.ofSeconds(5))
              .build()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + httpPort + "/actuator/prometheus"))
                      .timeout(Duration.ofSeconds(10))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      long count = 0;
      double seconds = 0;
      for (String line : resp.body().split("\n")) {
        Matcher m = LINE.matcher(line.trim());
        if (m.matches()) {
          double v = Double.parseDouble(m.group(2));
          if (m.group(1).equals("count")) {
            count += (long) v;
          } else {
            seconds += v;
          }
        }
      }
      return new Reading(count, seconds);
    } catch (IOException e) {
      return new Reading(0, 0);
    }
  }

  /** This JVM's collections and their total time. */
  static Reading ofThisJvm() {
    long count = 0;
    long ms = 0;
    for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
      count += Math.max(0, b.getCollectionCount());
      ms += Math.max(0, b.getCollectionTime());
    }
    return new Reading(count, ms / 1000.0);
  }
}
