package dev.paramserver.adminapi;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * Which build this is: the project's version and the abbreviated git commit it was built from,
 * written into {@link #RESOURCE} by the build. psctl prints it ({@code psctl version}) and the
 * master reports it on {@code GET /admin/status} (fields {@code version} and {@code commit}).
 *
 * @param version the project version, e.g. {@code 0.1.0-SNAPSHOT} ("unknown" when not built by
 *     Maven)
 * @param commit the abbreviated commit id ("unknown" when built outside a git checkout)
 */
public record BuildInfo(String version, String commit) {
  /** Where the build writes the properties {@code version} and {@code commit}. */
  public static final String RESOURCE = "/dev/paramserver/adminapi/build.properties";

  private static final String UNKNOWN = "unknown";
  private static final BuildInfo CURRENT = load();

  /** This build's. */
  public static BuildInfo current() {
    return CURRENT;
  }

  private static BuildInfo load() {
    Properties p = new Properties();
    try (InputStream in = BuildInfo.class.getResourceAsStream(RESOURCE)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // an unreadable resource is an unknown build, not a failure
    }
    return new BuildInfo(value(p, "version"), value(p, "commit"));
  }

  /** A property, or "unknown" when it is missing or was not filtered (still {@code @...@}). */
  private static String value(Properties p, String key) {
    String v = p.getProperty(key, "").trim();
    return v.isEmpty() || v.startsWith("@") ? UNKNOWN : v;
  }
}
