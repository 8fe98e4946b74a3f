package dev.paramserver.psctl.job;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.AdminException;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.psctl.command.PsctlCommand;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Mixin;

/** Base of the commands that talk to a running job's leader master. */
abstract class JobCommand extends PsctlCommand {
  @Mixin JobTarget target;

  /** The environment the options' defaults come from; null: psctl's (tests replace it). */
  Map<String, String> env;

  @Override
  protected Map<String, String> env() {
    return env != null ? env : super.env();
  }

  /** Does the command's work with the master. */
  protected abstract int runJob() throws Exception;

  @Override
  protected final int run() throws Exception {
    try {
      return runJob();
    } catch (AdminException e) {
      throw withTokenHint(e);
    }
  }

  /** A client of the leader master, found as the options say; usage errors for bad options. */
  AdminClient client() throws IOException {
    Map<String, String> env = env();
    String token = target.token(env);
    if (token == null) {
      throw usageError(
          "no admin token: pass --token or set "
              + JobTarget.TOKEN_ENV
              + " (or "
              + JobTarget.SERVICE_TOKEN_ENV
              + ")");
    }
    return AdminClient.forCommandLine("the master", masterUrl(env), token, timeout());
  }

  /** The leader's HTTP address from the options, or a usage error saying what is missing. */
  String masterUrl(Map<String, String> env) throws IOException {
    String master = target.master(env);
    String etcd = target.etcd(env);
    if (target.master != null && target.etcd != null) {
      throw usageError("give either --master or --etcd (with --job), not both");
    }
    if (master != null) {
      if (!master.startsWith("http://") && !master.startsWith("https://")) {
        throw usageError(
            "--master must be an HTTP URL such as http://127.0.0.1:8081, got '" + master + "'");
      }
      return master;
    }
    if (etcd != null) {
      return EtcdLeader.adminAddress(etcdSettings(etcd, env), timeout());
    }
    throw usageError(
        "say where the job is: --master URL, or --etcd ENDPOINTS and --job NAME (or set "
            + JobTarget.MASTER_ENV
            + ")");
  }

  /**
   * How to reach etcd: the endpoints, the job, and TLS (--etcd-ca) and authentication (--etcd-user
   * with --etcd-password-file or $PSCTL_ETCD_PASSWORD) when given; usage errors for a CA or
   * password file that does not exist, a user without a password or a password without a user.
   */
  EtcdSettings etcdSettings(String endpoints, Map<String, String> env) throws IOException {
    String ca = target.etcdCa(env);
    if (ca != null && !Files.isRegularFile(Path.of(ca))) {
      throw usageError("--etcd-ca " + ca + ": no such file (give the PEM file of etcd's CA)");
    }
    String user = target.etcdUser(env);
    String password = null;
    String file = target.etcdPasswordFile();
    if (file != null) {
      if (!Files.isRegularFile(Path.of(file))) {
        throw usageError("--etcd-password-file " + file + ": no such file");
      }
      password = Files.readAllLines(Path.of(file)).stream().findFirst().orElse("").strip();
    } else {
      String p = env.get(JobTarget.ETCD_PASSWORD_ENV);
      password = p == null || p.isEmpty() ? null : p;
    }
    if (user != null && (password == null || password.isEmpty())) {
      throw usageError(
          "--etcd-user "
              + user
              + " needs a password: --etcd-password-file FILE or $"
              + JobTarget.ETCD_PASSWORD_ENV);
    }
    if (user == null && password != null) {
      throw usageError("an etcd password was given without --etcd-user (or $PSCTL_ETCD_USER)");
    }
    List<String> list =
        Arrays.stream(endpoints.split(",")).map(String::trim).filter(e -> !e.isEmpty()).toList();
    if (list.isEmpty()) {
      throw usageError("--etcd names no endpoint: give client URLs such as http://127.0.0.1:2379");
    }
    return new EtcdSettings(
        list, target.job(env), timeout(), user, password, ca == null ? null : Path.of(ca));
  }

  /** Whether the options or the environment say where the master is. */
  boolean hasTarget() {
    Map<String, String> env = env();
    return target.master(env) != null || target.etcd(env) != null;
  }

  Duration timeout() {
    if (target.timeoutSeconds <= 0) {
      throw usageError("--timeout must be positive, got " + target.timeoutSeconds);
    }
    return Duration.ofSeconds(target.timeoutSeconds);
  }

  /** {@code e}, with the hint where the token comes from when the master refused it. */
  private static IOException withTokenHint(AdminException e) {
    if (e.kind() != AdminException.Kind.UNAUTHORIZED) {
      return e;
    }
    return new IOException(
        e.getMessage()
            + ": pass --token or set "
            + JobTarget.TOKEN_ENV
            + " (or "
            + JobTarget.SERVICE_TOKEN_ENV
            + ")",
        e);
  }
}
