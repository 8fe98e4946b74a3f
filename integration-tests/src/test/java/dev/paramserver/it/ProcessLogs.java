package dev.paramserver.it;

import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The last lines of a cluster's process logs (DEBUG lines left out), printed when a fault test
 * fails so that a CI run's output tells what the processes did, even when the run's folder is gone.
 */
final class ProcessLogs {
  private ProcessLogs() {}

  /**
   * The last {@code lines} lines (not DEBUG) of every {@code role} process's log, one block each.
   */
  static String tails(LocalCluster cluster, Role role, int lines) {
    StringBuilder out = new StringBuilder();
    for (ProcessInfo p : cluster.processes()) {
      if (p.role() == role) {
        out.append(tail(role.id() + "-" + p.index(), p.log(), lines));
      }
    }
    return out.toString();
  }

  /**
   * The {@code count} largest files under {@code dir} with their sizes, largest first: on a
   * failure, tells whether a process wrote far more than it should have (a log or write-ahead log
   * growing without bound fills a CI machine's disk and fails every test after it).
   */
  static String largestFiles(Path dir, int count) {
    StringBuilder out = new StringBuilder("----- largest files under " + dir);
    try {
      var store = Files.getFileStore(dir);
      out.append(" (")
          .append(store.getUsableSpace() >> 20)
          .append(" of ")
          .append(store.getTotalSpace() >> 20)
          .append(" MiB free)");
    } catch (IOException e) {
      out.append(" (free space unknown: ").append(e.getMessage()).append(')');
    }
    out.append(" -----").append(System.lineSeparator());
    try (Stream<Path> all = Files.walk(dir)) {
      all.filter(Files::isRegularFile)
          .map(p -> Map.entry(p, p.toFile().length()))
          .sorted(Map.Entry.<Path, Long>comparingByValue().reversed())
          .limit(count)
          .forEach(
              e ->
                  out.append(e.getValue())
                      .append(" bytes  ")
                      .append(dir.relativize(e.getKey()))
                      .append(System.lineSeparator()));
    } catch (IOException | java.io.UncheckedIOException e) {
      out.append("(unreadable: ").append(e).append(')').append(System.lineSeparator());
    }
    return out.toString();
  }

  /** The last {@code lines} lines (not DEBUG) of {@code log}, under a header naming it. */
  static String tail(String name, Path log, int lines) {
    StringBuilder out = new StringBuilder();
    out.append("----- last ").append(lines).append(" lines of ").append(name);
    out.append(" (").append(log).append(") -----").append(System.lineSeparator());
    Deque<String> last = new ArrayDeque<>();
    try (Stream<String> all = Files.lines(log, StandardCharsets.UTF_8)) {
      all.filter(l -> !l.contains(" DEBUG "))
          .forEach(
              l -> {
                last.addLast(l);
                if (last.size() > lines) {
                  last.removeFirst();
                }
              });
    } catch (IOException | java.io.UncheckedIOException e) {
      return out.append("(unreadable: ")
          .append(e)
          .append(')')
          .append(System.lineSeparator())
          .toString();
    }
    for (String l : List.copyOf(last)) {
      out.append(l).append(System.lineSeparator());
    }
    return out.toString();
  }
}
