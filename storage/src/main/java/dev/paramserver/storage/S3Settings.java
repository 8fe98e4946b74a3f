package dev.paramserver.storage;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * How to reach the S3-compatible object store behind {@code s3://bucket/key} locations. Every field
 * is optional: unset, the AWS SDK's defaults apply (AWS itself, credentials from {@code
 * AWS_ACCESS_KEY_ID}/{@code AWS_SECRET_ACCESS_KEY}, the profile files or the instance role).
 *
 * @param endpoint the store's URL, for MinIO, Ceph RGW or another S3-compatible store (for example
 *     {@code http://minio:9000}); empty: AWS's regional endpoint
 * @param region the region requests are signed for; empty: {@code us-east-1} (what MinIO and Ceph
 *     expect unless configured otherwise)
 * @param pathStyle address buckets as {@code endpoint/bucket/key} instead of {@code
 *     bucket.endpoint/key}; most self-hosted stores need it
 * @param accessKey the access key id; set it together with {@code secretKey}, or leave both empty
 *     for the SDK's default credential chain
 * @param secretKey the secret access key
 */
public record S3Settings(
    String endpoint, String region, boolean pathStyle, String accessKey, String secretKey) {
  /** The region used when none is set. */
  public static final String DEFAULT_REGION = "us-east-1";

  public S3Settings {
    endpoint = blankToNull(endpoint);
    region = blankToNull(region) == null ? DEFAULT_REGION : region.trim();
    accessKey = blankToNull(accessKey);
    secretKey = blankToNull(secretKey);
    if (endpoint != null) {
      checkEndpoint(endpoint);
    }
    if ((accessKey == null) != (secretKey == null)) {
      throw new IllegalArgumentException(
          "S3 access-key and secret-key go together: set both, or neither to use the default AWS"
              + " credential chain");
    }
  }

  /** No endpoint, region or credentials: AWS with the SDK's default credential chain. */
  public static S3Settings defaults() {
    return new S3Settings(null, null, false, null, null);
  }

  /** The endpoint as a URI, or null for AWS's own. */
  URI endpointUri() {
    return endpoint == null ? null : URI.create(endpoint);
  }

  boolean hasStaticCredentials() {
    return accessKey != null;
  }

  @Override
  public String toString() {
    // never print the secret
    return "S3Settings[endpoint="
        + endpoint
        + ", region="
        + region
        + ", pathStyle="
        + pathStyle
        + ", accessKey="
        + accessKey
        + ", secretKey="
        + (secretKey == null ? "null" : "***")
        + "]";
  }

  private static void checkEndpoint(String endpoint) {
    URI uri;
    try {
      uri = new URI(endpoint);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(
          "S3 endpoint '" + endpoint + "' is not a URL: " + e.getMessage(), e);
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https") || uri.getHost() == null) {
      throw new IllegalArgumentException(
          "S3 endpoint '"
              + endpoint
              + "' must be an http:// or https:// URL with a host, for example"
              + " http://127.0.0.1:9000");
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.trim();
  }
}
