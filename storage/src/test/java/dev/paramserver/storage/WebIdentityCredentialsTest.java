package dev.paramserver.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider;
import software.amazon.awssdk.regions.Region;

/**
 * EKS IRSA: with {@code AWS_ROLE_ARN} and {@code AWS_WEB_IDENTITY_TOKEN_FILE} set, the default
 * credential chain exchanges the token through STS. That provider works only with the SDK's {@code
 * sts} module on the classpath; without it, it fails saying so and the chain skips it.
 */
class WebIdentityCredentialsTest {
  @TempDir Path dir;

  @Test
  void theWebIdentityProvider_findsTheStsModule() throws Exception {
    Path token = Files.writeString(dir.resolve("token"), "not-a-real-token");
    String sts = System.getProperty("aws.endpointUrlSts");
    // STS on a closed port: the call fails fast, after the provider was built
    System.setProperty("aws.endpointUrlSts", "http://127.0.0.1:1");
    System.setProperty("aws.region", Region.US_EAST_1.id());
    try (WebIdentityTokenFileCredentialsProvider p =
        WebIdentityTokenFileCredentialsProvider.builder()
            .roleArn("arn:aws:iam::123456789012:role/paramserver")
            .webIdentityTokenFile(token)
            .roleSessionName("test")
            .build()) {
      Throwable t = catchThrowable(p::resolveCredentials);
      assertThat(t).isNotNull();
      assertThat(String.valueOf(t.getMessage())).doesNotContain("'sts' service module");
    } finally {
      if (sts == null) {
        System.clearProperty("aws.endpointUrlSts");
      } else {
        System.setProperty("aws.endpointUrlSts", sts);
      }
      System.clearProperty("aws.region");
    }
  }
}
