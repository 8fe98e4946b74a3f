package dev.paramserver.psctl.job;

import java.util.Map;
import picocli.CommandLine.Option;

/**
 * How a job command reaches the leader master: {@code --master URL}, or {@code --etcd} and {@code
 * --job} (the leader's gRPC address from {@code master/addr}, then its HTTP address from its
 * GetStatus); the admin token from {@code --token}. Each option left out is taken from the
 * environment ({@link #MASTER_ENV}, {@link #ETCD_ENV}, {@link #JOB_ENV}, {@link #TOKEN_ENV}, else
 * {@link #SERVICE_TOKEN_ENV}); an option given always wins, and {@code --etcd} on the command line
 * overrides {@code PSCTL_MASTER} (and {@code --master} {@code PSCTL_ETCD}).
 */
public final class JobTarget {
  static final String MASTER_ENV = "PSCTL_MASTER";
  static final String ETCD_ENV = "PSCTL_ETCD";
  static final String JOB_ENV = "PSCTL_JOB";
  static final String TOKEN_ENV = "PSCTL_TOKEN";
  static final String ETCD_USER_ENV = "PSCTL_ETCD_USER";
  static final String ETCD_PASSWORD_ENV = "PSCTL_ETCD_PASSWORD";
  static final String ETCD_CA_ENV = "PSCTL_ETCD_CA";

  /** The variable the services read the token from, accepted too. */
  static final String SERVICE_TOKEN_ENV = "PARAMSERVER_ADMIN_TOKEN";

  static final String DEFAULT_JOB = "default";

  /** The default of {@code --timeout}. */
  static final int DEFAULT_TIMEOUT_SECONDS = 10;

  @Option(
      names = "--master",
      paramLabel = "URL",
      description =
          "The master's HTTP address, e.g. http://127.0.0.1:8081 (a standby is followed"
              + " to the leader; default: $"
              + MASTER_ENV
              + ").")
  String master;

  @Option(
      names = "--etcd",
      paramLabel = "ENDPOINTS",
      description =
          "etcd client URLs, comma-separated, to find the leader through (with --job; default: $"
              + ETCD_ENV
              + ").")
  String etcd;

  @Option(
      names = "--etcd-ca",
      paramLabel = "PEM",
      description =
          "PEM file of the CA that signed etcd's certificate, for https:// endpoints (default: $"
              + ETCD_CA_ENV
              + ").")
  String etcdCa;

  @Option(
      names = "--etcd-user",
      paramLabel = "NAME",
      description =
          "etcd user, when etcd has authentication on; the password from --etcd-password-file"
              + " or $"
              + ETCD_PASSWORD_ENV
              + " (default: $"
              + ETCD_USER_ENV
              + ").")
  String etcdUser;

  @Option(
      names = "--etcd-password-file",
      paramLabel = "FILE",
      description =
          "File holding the etcd user's password (its first line; default: $"
              + ETCD_PASSWORD_ENV
              + ").")
  String etcdPasswordFile;

  @Option(
      names = "--job",
      paramLabel = "NAME",
      description =
          "The job's name, its etcd key prefix (with --etcd; default: $"
              + JOB_ENV
              + ", else "
              + DEFAULT_JOB
              + ").")
  String job;

  @Option(
      names = "--token",
      paramLabel = "TOKEN",
      description =
          "The admin token (default: $" + TOKEN_ENV + ", else $" + SERVICE_TOKEN_ENV + ").")
  String token;

  @Option(
      names = "--timeout",
      paramLabel = "SECONDS",
      description = "Timeout of each call in seconds (default: ${DEFAULT-VALUE}).",
      defaultValue = "" + DEFAULT_TIMEOUT_SECONDS)
  int timeoutSeconds;

  /** The token given, else the environment's, else null. */
  String token(Map<String, String> env) {
    if (token != null && !token.isBlank()) {
      return token.trim();
    }
    String t = value(env, TOKEN_ENV);
    return t != null ? t : value(env, SERVICE_TOKEN_ENV);
  }

  /** The master URL given, else (when --etcd is not given) the environment's, else null. */
  String master(Map<String, String> env) {
    if (master != null) {
      return master.trim();
    }
    return etcd == null ? value(env, MASTER_ENV) : null;
  }

  /** The etcd endpoints given, else (when --master is not given) the environment's, else null. */
  String etcd(Map<String, String> env) {
    if (etcd != null) {
      return etcd.trim();
    }
    return master == null && value(env, MASTER_ENV) == null ? value(env, ETCD_ENV) : null;
  }

  /** The etcd CA file given, else the environment's, else null. */
  String etcdCa(Map<String, String> env) {
    return etcdCa != null && !etcdCa.isBlank() ? etcdCa.trim() : value(env, ETCD_CA_ENV);
  }

  /** The etcd user given, else the environment's, else null. */
  String etcdUser(Map<String, String> env) {
    return etcdUser != null && !etcdUser.isBlank() ? etcdUser.trim() : value(env, ETCD_USER_ENV);
  }

  /** The etcd password file given, or null (the password then comes from the environment). */
  String etcdPasswordFile() {
    return etcdPasswordFile != null && !etcdPasswordFile.isBlank() ? etcdPasswordFile.trim() : null;
  }

  /** The job name given, else the environment's, else "default". */
  String job(Map<String, String> env) {
    if (job != null && !job.isBlank()) {
      return job.trim();
    }
    String j = value(env, JOB_ENV);
    return j != null ? j : DEFAULT_JOB;
  }

  private static String value(Map<String, String> env, String name) {
    String v = env.get(name);
    return v == null || v.isBlank() ? null : v.trim();
  }
}
