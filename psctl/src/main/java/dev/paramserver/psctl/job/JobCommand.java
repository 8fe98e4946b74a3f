package dev.paramserver.psctl.job;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.AdminException;
import dev.paramserver.psctl.PsctlCommand;
import java.io.IOException;
import java.time.Duration;
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
    return AdminClient.create("the master", masterUrl(env), token, timeout());
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
      return EtcdLeader.adminAddress(etcd, target.job(env), timeout());
    }
    throw usageError(
        "say where the job is: --master URL, or --etcd ENDPOINTS and --job NAME (or set "
            + JobTarget.MASTER_ENV
            + ")");
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
