package dev.paramserver.bench.train;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the start-up of a 1 + 1 job goes: the instants (seconds from launch) at which its master,
 * pserver and trainer reached each milestone, read from the lines they log (each starts with its
 * ISO instant; the local cluster writes a {@code ===== <instant> starting} header before each
 * launch). A milestone whose line is missing is left out, so a renamed log line shows as a gap in
 * the table rather than a wrong figure.
 */
final class StartupTimeline {
  /** The milestones in the order a job reaches them: name, log file, what its line contains. */
  static final List<Milestone> MILESTONES =
      List.of(
          new Milestone("services launched", "master-0", "===== ", true),
          new Milestone(
              "master JVM up (Spring starting)", "master-0", "Starting MasterApplication"),
          new Milestone("pserver JVM up", "pserver-0", "Starting PserverApplication"),
          new Milestone("trainer JVM up", "trainer-0", "Starting TrainerApplication"),
          new Milestone("master etcd connected", "master-0", "is reachable"),
          new Milestone("pserver etcd connected", "pserver-0", "is reachable"),
          new Milestone("trainer etcd connected", "trainer-0", "is reachable"),
          new Milestone("master context refreshed", "master-0", "Started MasterApplication"),
          new Milestone("master leads", "master-0", "leads job"),
          new Milestone("pserver context refreshed", "pserver-0", "Started PserverApplication"),
          new Milestone("pserver registered", "pserver-0", "registered as pserver"),
          new Milestone("trainer context refreshed", "trainer-0", "Started TrainerApplication"),
          new Milestone("trainer found pservers", "trainer-0", "found 1 pservers"),
          new Milestone("pserver initialised", "pserver-0", "initialised by trainer"),
          new Milestone("trainer connected to master", "trainer-0", "connected to master"),
          new Milestone("master indexed dataset", "master-0", "dataset set by trainer"));

  /**
   * One milestone.
   *
   * @param header whether the line is the cluster's launch header (its instant has nanoseconds)
   */
  record Milestone(String name, String process, String contains, boolean header) {
    Milestone(String name, String process, String contains) {
      this(name, process, contains, false);
    }
  }

  private static final Pattern INSTANT =
      Pattern.compile("^(?:===== )?(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?Z)");

  private StartupTimeline() {}

  /**
   * The seconds from {@code launchedMs} (epoch milliseconds) to each milestone found in the logs
   * under {@code logs} ({@code <process>.log}), in {@link #MILESTONES} order.
   */
  static Map<String, Double> read(Path logs, long launchedMs) {
    Map<String, Double> out = new LinkedHashMap<>();
    Map<String, List<String>> lines = new LinkedHashMap<>();
    for (Milestone m : MILESTONES) {
      List<String> file = lines.computeIfAbsent(m.process(), p -> lines(logs.resolve(p + ".log")));
      for (String line : file) {
        boolean isHeader = line.startsWith("===== ");
        if (isHeader != m.header() || !line.contains(m.contains())) {
          continue;
        }
        Instant at = instant(line);
        if (at != null) {
          out.put(m.name(), (at.toEpochMilli() - launchedMs) / 1000.0);
          break;
        }
      }
    }
    return out;
  }

  /** The instant a log line starts with, or null. */
  static Instant instant(String line) {
    Matcher m = INSTANT.matcher(line);
    if (!m.find()) {
      return null;
    }
    try {
      return Instant.parse(m.group(1));
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static List<String> lines(Path file) {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return List.of();
    }
  }
}
