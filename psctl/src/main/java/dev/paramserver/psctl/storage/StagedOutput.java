package dev.paramserver.psctl.storage;

import dev.paramserver.storage.Location;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Output files for an {@code s3://bucket/prefix} destination: written under a local staging prefix
 * (a temporary directory), then uploaded one object per file, each with one PUT, and the staging
 * directory deleted. For a local destination it is a pass-through.
 */
public final class StagedOutput implements AutoCloseable {
  private final String destination;
  private final Path staging;
  private final String stagingPrefix;

  private StagedOutput(String destination, Path staging, String stagingPrefix) {
    this.destination = destination;
    this.staging = staging;
    this.stagingPrefix = stagingPrefix;
  }

  /**
   * @param destination a local prefix, or an {@code s3://bucket/prefix} URI (checked here, so a
   *     malformed one fails before any input is read)
   */
  public static StagedOutput of(String destination) throws IOException {
    Location loc;
    try {
      loc = Location.parse(destination);
    } catch (IllegalArgumentException e) {
      throw new IOException("--output: " + e.getMessage(), e);
    }
    if (!loc.isS3()) {
      return new StagedOutput(destination, null, destination);
    }
    if (loc.key().isEmpty() || loc.key().endsWith("/")) {
      throw new IOException(
          "--output "
              + destination
              + " needs a file name prefix after the bucket and folders, e.g. s3://bucket/data/train");
    }
    Path dir = Files.createTempDirectory("psctl-output-");
    String name = loc.key().substring(loc.key().lastIndexOf('/') + 1);
    return new StagedOutput(destination, dir, dir.resolve(name).toString());
  }

  /** The prefix to write local files under (the destination itself when it is local). */
  public String localPrefix() {
    return stagingPrefix;
  }

  /** Where a file written under {@link #localPrefix()} ends up. */
  public String destinationOf(Path file) {
    return staging == null
        ? file.toString()
        : destination + file.toString().substring(stagingPrefix.length());
  }

  /** Uploads the written files (nothing to do for a local destination). */
  public List<String> publish(List<Path> files, Storage storage) throws IOException {
    List<String> out = new ArrayList<>(files.size());
    for (Path f : files) {
      String to = destinationOf(f);
      if (staging != null) {
        storage.upload(f, to);
      }
      out.add(to);
    }
    return out;
  }

  /** Deletes the staging directory (a no-op for a local destination). */
  @Override
  public void close() throws IOException {
    if (staging == null) {
      return;
    }
    try (Stream<Path> s = Files.walk(staging)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
