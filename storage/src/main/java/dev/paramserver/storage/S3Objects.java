package dev.paramserver.storage;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.NoSuchBucketException;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The S3 calls the project makes, through one AWS SDK v2 client, each failure turned into a {@link
 * StorageException} naming the object and what to check. The SDK retries throttling and server
 * errors itself (its standard retry policy); nothing above it retries again.
 */
final class S3Objects implements AutoCloseable {
  private final S3Client client;
  private final S3Settings settings;
  private final String settingsName;

  S3Objects(S3Settings settings, String settingsName) {
    this.settings = settings;
    this.settingsName = settingsName;
    AwsCredentialsProvider credentials =
        settings.hasStaticCredentials()
            ? StaticCredentialsProvider.create(
                AwsBasicCredentials.create(settings.accessKey(), settings.secretKey()))
            : DefaultCredentialsProvider.builder().build();
    var builder =
        S3Client.builder()
            .httpClientBuilder(
                UrlConnectionHttpClient.builder()
                    .connectionTimeout(Duration.ofSeconds(10))
                    .socketTimeout(Duration.ofMinutes(1)))
            .region(Region.of(settings.region()))
            .forcePathStyle(settings.pathStyle())
            .credentialsProvider(credentials)
            // Checksums only where S3 requires them: MinIO, Ceph and s3proxy do not all accept the
            // trailing checksums newer SDKs send by default. Data integrity is ours: RecordIO
            // chunks and checkpoints carry CRC-32s that readers check.
            .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
            .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED);
    if (settings.endpointUri() != null) {
      builder.endpointOverride(settings.endpointUri());
    }
    this.client = builder.build();
  }

  /** The object's size in bytes. */
  long size(Location loc) throws StorageException {
    try {
      return client
          .headObject(HeadObjectRequest.builder().bucket(loc.bucket()).key(loc.key()).build())
          .contentLength();
    } catch (SdkException e) {
      throw error(loc, "read", e);
    }
  }

  /** Whether the object exists. */
  boolean exists(Location loc) throws StorageException {
    try {
      size(loc);
      return true;
    } catch (StorageException e) {
      if (e.kind() == StorageException.Kind.NOT_FOUND && !bucketMissing(e)) {
        return false;
      }
      throw e;
    }
  }

  private static boolean bucketMissing(StorageException e) {
    return e.getCause() instanceof NoSuchBucketException;
  }

  /** Fills {@code dst} with the bytes at {@code position}: one ranged GET. */
  void readRange(Location loc, ByteBuffer dst, long position) throws IOException {
    int n = dst.remaining();
    if (n == 0) {
      return;
    }
    GetObjectRequest req =
        GetObjectRequest.builder()
            .bucket(loc.bucket())
            .key(loc.key())
            .range("bytes=" + position + "-" + (position + n - 1))
            .build();
    try (ResponseInputStream<GetObjectResponse> in = client.getObject(req)) {
      byte[] buf = new byte[Math.min(n, 1 << 16)];
      while (dst.hasRemaining()) {
        int r = in.read(buf, 0, Math.min(buf.length, dst.remaining()));
        if (r < 0) {
          throw new EOFException(loc + " ended before offset " + (position + n));
        }
        dst.put(buf, 0, r);
      }
    } catch (SdkException e) {
      throw error(loc, "read", e);
    }
  }

  /** The whole object as a stream (read as it arrives, never buffered whole). */
  InputStream open(Location loc) throws StorageException {
    try {
      return client.getObject(
          GetObjectRequest.builder().bucket(loc.bucket()).key(loc.key()).build());
    } catch (SdkException e) {
      throw error(loc, "read", e);
    }
  }

  /** Uploads a local file as the object (one PUT: the object appears whole or not at all). */
  void put(Path file, Location loc) throws StorageException {
    try {
      client.putObject(
          PutObjectRequest.builder().bucket(loc.bucket()).key(loc.key()).build(),
          RequestBody.fromFile(file));
    } catch (SdkException e) {
      throw error(loc, "write", e);
    }
  }

  /** Deletes the object (deleting a missing object is not an error in S3). */
  void delete(Location loc) throws StorageException {
    try {
      client.deleteObject(b -> b.bucket(loc.bucket()).key(loc.key()));
    } catch (SdkException e) {
      throw error(loc, "delete", e);
    }
  }

  /** Keys of the bucket starting with {@code prefix}, in S3's (lexicographic) order. */
  List<String> list(Location where, String prefix) throws StorageException {
    List<String> keys = new ArrayList<>();
    try {
      for (S3Object o :
          client
              .listObjectsV2Paginator(
                  ListObjectsV2Request.builder().bucket(where.bucket()).prefix(prefix).build())
              .contents()) {
        keys.add(o.key());
      }
    } catch (SdkException e) {
      throw error(where, "list", e);
    }
    return keys;
  }

  private StorageException error(Location loc, String action, SdkException e) {
    String what = "cannot " + action + " " + loc + ": ";
    if (e instanceof NoSuchBucketException) {
      return new StorageException(
          StorageException.Kind.NOT_FOUND,
          what + "bucket '" + loc.bucket() + "' does not exist" + at(),
          e);
    }
    if (e instanceof NoSuchKeyException || e instanceof S3Exception s && s.statusCode() == 404) {
      return new StorageException(
          StorageException.Kind.NOT_FOUND, what + "no such object" + at(), e);
    }
    if (e instanceof S3Exception s && (s.statusCode() == 403 || s.statusCode() == 401)) {
      String code = s.awsErrorDetails() == null ? "" : s.awsErrorDetails().errorCode();
      return new StorageException(
          StorageException.Kind.ACCESS_DENIED,
          what
              + "access denied ("
              + (code == null || code.isEmpty() ? "HTTP " + s.statusCode() : code)
              + ")"
              + at()
              + ": check "
              + settingsName
              + ".access-key and .secret-key (or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) and"
              + " the bucket's policy",
          e);
    }
    String msg = String.valueOf(e.getMessage());
    if (e instanceof SdkClientException && msg.toLowerCase().contains("credentials")) {
      return new StorageException(
          StorageException.Kind.NO_CREDENTIALS,
          what
              + "no S3 credentials found: set "
              + settingsName
              + ".access-key and "
              + settingsName
              + ".secret-key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an AWS profile",
          e);
    }
    if (e instanceof SdkClientException && !connectFailed(e) && bucketMissing(loc)) {
      // a server may answer a write to a missing bucket (404) and close the connection while the
      // client still sends the body: the client then sees a broken write, not the answer
      return new StorageException(
          StorageException.Kind.NOT_FOUND,
          what + "bucket '" + loc.bucket() + "' does not exist" + at(),
          e);
    }
    if (e instanceof SdkClientException) {
      return new StorageException(
          StorageException.Kind.UNREACHABLE,
          what + "the S3 endpoint cannot be reached" + at() + " (" + msg + ")",
          e);
    }
    return new StorageException(StorageException.Kind.OTHER, what + msg, e);
  }

  /** Asks the endpoint whether the bucket exists: true only when it answers that it does not. */
  private boolean bucketMissing(Location loc) {
    try {
      client.headBucket(b -> b.bucket(loc.bucket()));
      return false;
    } catch (NoSuchBucketException e) {
      return true;
    } catch (S3Exception e) {
      return e.statusCode() == 404;
    } catch (SdkException e) {
      return false;
    }
  }

  /** True when no connection was made at all (nothing to ask the endpoint about). */
  private static boolean connectFailed(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException || t instanceof UnknownHostException) {
        return true;
      }
    }
    return false;
  }

  private String at() {
    return settings.endpoint() == null ? "" : " at " + settings.endpoint();
  }

  @Override
  public void close() {
    client.close();
  }
}
