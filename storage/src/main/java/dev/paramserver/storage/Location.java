package dev.paramserver.storage;

import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where a file lives: a local path, or an object {@code s3://bucket/key} in an S3-compatible store.
 * Parsing rejects what cannot be meant with a message naming the text: another scheme ({@code
 * gs://}, {@code file://}), {@code s3:/bucket} with one slash, a missing or malformed bucket name.
 *
 * @param text the location as given (an {@code s3://} URI, or a path)
 * @param bucket the bucket of an S3 location, else null
 * @param key the key of an S3 location (may be empty: the bucket's root), else null
 */
public record Location(String text, String bucket, String key) {
  /** The scheme prefix of object-store locations. */
  public static final String S3_PREFIX = "s3://";

  private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]");
  private static final Pattern SCHEME = Pattern.compile("^[A-Za-z][A-Za-z0-9+.\\-]*:/.*");

  /**
   * Parses {@code text}: {@code s3://bucket/key} or a local path.
   *
   * @throws IllegalArgumentException naming the text and what is wrong with it
   */
  public static Location parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty location: give a path or an s3://bucket/key URI");
    }
    String t = text.trim();
    if (t.regionMatches(true, 0, S3_PREFIX, 0, S3_PREFIX.length())) {
      String rest = t.substring(S3_PREFIX.length());
      int slash = rest.indexOf('/');
      String bucket = slash < 0 ? rest : rest.substring(0, slash);
      String key = slash < 0 ? "" : rest.substring(slash + 1);
      if (bucket.isEmpty()) {
        throw new IllegalArgumentException("'" + text + "' names no bucket: write s3://bucket/key");
      }
      if (!BUCKET.matcher(bucket).matches()) {
        throw new IllegalArgumentException(
            "'"
                + text
                + "' has an invalid bucket name '"
                + bucket
                + "': 3 to 63 lower-case letters, digits, dots and hyphens");
      }
      return new Location(S3_PREFIX + bucket + "/" + key, bucket, key);
    }
    if (t.toLowerCase(Locale.ROOT).startsWith("s3:")) {
      throw new IllegalArgumentException(
          "'" + text + "' is not an S3 URI: write s3://bucket/key (two slashes)");
    }
    if (SCHEME.matcher(t).matches()) {
      String scheme = t.substring(0, t.indexOf(':'));
      throw new IllegalArgumentException(
          "'"
              + text
              + "' uses the unsupported scheme '"
              + scheme
              + "': give a local path or an s3://bucket/key URI");
    }
    return new Location(t, null, null);
  }

  /** Whether {@code text} is meant as an object-store location ({@code s3:} prefix). */
  public static boolean isS3(String text) {
    return text != null && text.trim().regionMatches(true, 0, "s3:", 0, 3);
  }

  /** Whether this is an object in an S3-compatible store. */
  public boolean isS3() {
    return bucket != null;
  }

  /** The local path (only for a local location). */
  public Path path() {
    if (isS3()) {
      throw new IllegalStateException(text + " is not a local path");
    }
    return Path.of(text);
  }

  /**
   * The location of {@code name} inside this one taken as a directory (a key prefix for S3: {@code
   * s3://b/ckpt} and {@code x} give {@code s3://b/ckpt/x}).
   */
  public Location resolve(String name) {
    if (!isS3()) {
      return new Location(Path.of(text).resolve(name).toString(), null, null);
    }
    String prefix = key.isEmpty() || key.endsWith("/") ? key : key + "/";
    return new Location(S3_PREFIX + bucket + "/" + prefix + name, bucket, prefix + name);
  }

  @Override
  public String toString() {
    return text;
  }
}
