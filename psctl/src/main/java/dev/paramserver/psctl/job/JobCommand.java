package dev.paramserver.psctl.job;

import dev.paramserver.psctl.PsctlCommand;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Mixin;

/** Base of the commands that talk to a running job's leader master. */
abstract class JobCommand extends PsctlCommand {
  @Mixin JobTarget target;

  /** The environment the token may come from (tests replace it). */
  Map<String, String> env = System.getenv();

  /** A client of the leader master, found as the options say; usage errors for bad options. */
  MasterClient client() {
    String token = target.token(env);
    if (token == null) {
      throw usageError("no admin token: pass --token or set " + JobTarget.TOKEN_ENV);
    }
    if (target.timeoutSeconds <= 0) {
      throw usageError("--timeout must be positive, got " + target.timeoutSeconds);
    }
    Duration timeout = Duration.ofSeconds(target.timeoutSeconds);
    if (target.master != null && target.etcd != null) {
      throw usageError("give either --master or --etcd (with --job), not both");
    }
    if (target.master != null) {
      String m = target.master.trim();
      if (!m.startsWith("http://") && !m.startsWith("https://")) {
        throw usageError(
            "--master must be an HTTP URL such as http://127.0.0.1:8081, got '" + m + "'");
      }
      return new MasterClient(m, token, timeout);
    }
    if (target.etcd != null) {
      return new MasterClient(
          MasterClient.resolveThroughEtcd(target.etcd, target.job, timeout), token, timeout);
    }
    throw usageError("say where the job is: --master URL, or --etcd ENDPOINTS and --job NAME");
  }
}
