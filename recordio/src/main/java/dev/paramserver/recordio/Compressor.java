package dev.paramserver.recordio;

import java.util.Locale;

/** How a chunk's payload is stored; the numeric code is the header's compressor field. */
public enum Compressor {
  /** Payload stored as is. */
  NONE(0),
  /** Snappy framing format, starting with the "sNaPpY" stream identifier. */
  SNAPPY(1),
  /** gzip (RFC 1952). */
  GZIP(2);

  private final int code;

  Compressor(int code) {
    this.code = code;
  }

  /** The value stored in the chunk header. */
  public int code() {
    return code;
  }

  /**
   * The compressor with the given header code.
   *
   * @throws IllegalArgumentException for an unknown code
   */
  public static Compressor fromCode(int code) {
    for (Compressor c : values()) {
      if (c.code == code) {
        return c;
      }
    }
    throw new IllegalArgumentException(
        "unknown RecordIO compressor code " + code + " (expected 0 none, 1 snappy or 2 gzip)");
  }

  /**
   * Parses "none", "snappy" or "gzip", case-insensitively.
   *
   * @throws IllegalArgumentException naming the bad value and the accepted ones
   */
  public static Compressor parse(String name) {
    if (name != null) {
      switch (name.trim().toLowerCase(Locale.ROOT)) {
        case "none":
          return NONE;
        case "snappy":
          return SNAPPY;
        case "gzip":
          return GZIP;
        default:
          break;
      }
    }
    throw new IllegalArgumentException(
        "unknown compressor '" + name + "': expected one of none, gzip, snappy");
  }

  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }
}
