package dev.paramserver.serving;

import dev.paramserver.storage.S3Settings;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How the replica reaches {@code s3://} job-wide checkpoints and model files ({@code
 * paramserver.serving.s3.*}; local files need none of it).
 *
 * @param s3 the S3-compatible store: {@code endpoint} (for MinIO, Ceph and others; empty: AWS),
 *     {@code region} (default us-east-1), {@code path-style} (true for most self-hosted stores),
 *     {@code access-key} and {@code secret-key} (empty: the AWS SDK's default credential chain,
 *     e.g. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). The environment variables
 *     PARAMSERVER_S3_ENDPOINT, PARAMSERVER_S3_REGION and PARAMSERVER_S3_PATH_STYLE set the first
 *     three for every service at once.
 */
@ConfigurationProperties("paramserver.serving")
public record ServingStorageProperties(@DefaultValue @NestedConfigurationProperty S3Settings s3) {}
