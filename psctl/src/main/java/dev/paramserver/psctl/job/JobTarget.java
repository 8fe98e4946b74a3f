package dev.paramserver.psctl.job;

import picocli.CommandLine.Option;

/**
 * How a job command reaches the leader master: {@code --master URL}, or {@code --etcd} and {@code
 * --job} (the leader's gRPC address from {@code master/addr}, then its HTTP address from its
 * GetStatus); the admin token from {@code --token} or {@code PARAMSERVER_ADMIN_TOKEN}.
 */
public final class JobTarget {
  static final String TOKEN_ENV = "PARAMSERVER_ADMIN_TOKEN";

  @Option(
      names = "--master",
      paramLabel = "URL",
      description =
          "The master's HTTP address, e.g. http://127.0.0.1:8081 (a standby is followed"
              + " to the leader).")
  String master;

  @Option(
      names = "--etcd",
      paramLabel = "ENDPOINTS",
      description = "etcd client URLs, comma-separated, to find the leader through (with --job).")
  String etcd;

  @Option(
      names = "--job",
      paramLabel = "NAME",
      description = "The job's name, its etcd key prefix (with --etcd; default: ${DEFAULT-VALUE}).",
      defaultValue = "default")
  String job;

  @Option(
      names = "--token",
      paramLabel = "TOKEN",
      description = "The admin token (default: the environment variable " + TOKEN_ENV + ").")
  String token;

  @Option(
      names = "--timeout",
      paramLabel = "SECONDS",
      description = "Timeout of each call in seconds (default: ${DEFAULT-VALUE}).",
      defaultValue = "10")
  int timeoutSeconds;

  /** The token given, else the environment's, else null. */
  String token(java.util.Map<String, String> env) {
    if (token != null && !token.isBlank()) {
      return token.trim();
    }
    String t = env.get(TOKEN_ENV);
    return t == null || t.isBlank() ? null : t.trim();
  }
}
