package dev.paramserver.psctl.storage;

import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import picocli.CommandLine.Option;

/**
 * How psctl reaches {@code s3://} files: the options below, which default to the environment
 * variables the services read too (PARAMSERVER_S3_ENDPOINT, PARAMSERVER_S3_REGION,
 * PARAMSERVER_S3_PATH_STYLE). Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID
 * / AWS_SECRET_ACCESS_KEY, ~/.aws/credentials, an instance role), never from the command line.
 */
public final class S3Options {
  @Option(
      names = "--s3-endpoint",
      paramLabel = "URL",
      defaultValue = "${env:PARAMSERVER_S3_ENDPOINT}",
      description =
          "S3-compatible endpoint for s3:// URIs, e.g. http://127.0.0.1:9000 (default:"
              + " $PARAMSERVER_S3_ENDPOINT, else AWS).")
  String endpoint;

  @Option(
      names = "--s3-region",
      paramLabel = "REGION",
      defaultValue = "${env:PARAMSERVER_S3_REGION}",
      description =
          "Region to sign S3 requests for (default: $PARAMSERVER_S3_REGION, else us-east-1).")
  String region;

  @Option(
      names = "--s3-path-style",
      paramLabel = "true|false",
      arity = "0..1",
      fallbackValue = "true",
      defaultValue = "${env:PARAMSERVER_S3_PATH_STYLE:-false}",
      description =
          "Address buckets as endpoint/bucket (MinIO, Ceph; default: $PARAMSERVER_S3_PATH_STYLE,"
              + " else false).")
  boolean pathStyle;

  /** A storage for local paths and s3:// URIs with these settings. */
  public Storage storage() {
    return Storage.create(new S3Settings(endpoint, region, pathStyle, null, null), "psctl --s3");
  }
}
