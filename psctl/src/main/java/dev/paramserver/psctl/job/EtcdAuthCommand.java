package dev.paramserver.psctl.job;

import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.EtcdAuthSetup;
import dev.paramserver.psctl.command.OutputFormat;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code psctl etcd-auth}: turns authentication on in an etcd the job owns (the chart's bundled
 * etcd runs it beside etcd at every start), idempotently ({@link EtcdAuthSetup}).
 */
@Command(
    name = "etcd-auth",
    description =
        "Turn authentication on in an etcd the job owns, idempotently: a root user, and the job"
            + " user (--etcd-user) allowed the job's keys only; run again, it brings the passwords"
            + " up to date. The job user's password from --etcd-password-file or $"
            + JobTarget.ETCD_PASSWORD_ENV
            + ", root's from --root-password-file or $"
            + EtcdAuthCommand.ROOT_PASSWORD_ENV
            + ".")
public final class EtcdAuthCommand extends JobCommand {
  static final String ROOT_PASSWORD_ENV = "PSCTL_ETCD_ROOT_PASSWORD";

  @Option(
      names = "--root-password-file",
      paramLabel = "FILE",
      description =
          "File holding the password of etcd's root user (its first line; default: $"
              + ROOT_PASSWORD_ENV
              + ").")
  String rootPasswordFile;

  @Mixin OutputFormat output;

  /** What {@code -o json|yaml} prints. */
  record Result(boolean turnedOn, String user, String role, String prefix) {}

  @Option(
      names = "--hold",
      description =
          "Keep running once done, until stopped (as a container beside etcd, which must not end).")
  boolean hold;

  @Override
  protected int runJob() throws Exception {
    Map<String, String> env = env();
    String endpoints = target.etcd(env);
    if (endpoints == null) {
      throw usageError(
          "etcd-auth talks to etcd: pass --etcd ENDPOINTS and --job NAME (or set "
              + JobTarget.ETCD_ENV
              + ")");
    }
    String user = target.etcdUser(env);
    if (user == null) {
      throw usageError("name the job's etcd user: --etcd-user NAME (or $PSCTL_ETCD_USER)");
    }
    String rootPassword = secret(rootPasswordFile, "--root-password-file", env, ROOT_PASSWORD_ENV);
    String password =
        secret(target.etcdPasswordFile(), "--etcd-password-file", env, JobTarget.ETCD_PASSWORD_ENV);
    String job = target.job(env);
    EtcdAuthSetup setup = new EtcdAuthSetup(List.of(endpoints.split(",")), job, timeout());
    boolean now;
    try {
      now = setup.ensure(rootPassword, user, password);
    } catch (CoordinationException e) {
      err().println("etcd-auth: " + e.getMessage());
      err().flush();
      return 1;
    }
    if (output.structured()) {
      output.print(out(), new Result(now, user, setup.roleName(), "/paramserver/" + job + "/"));
    } else {
      out()
          .println(
              (now ? "etcd authentication turned on" : "etcd authentication was on; passwords set")
                  + ": user "
                  + user
                  + " (role "
                  + setup.roleName()
                  + ") may read and write /paramserver/"
                  + job
                  + "/ only");
    }
    out().flush();
    if (hold) {
      new CountDownLatch(1).await(); // until the container is stopped
    }
    return 0;
  }

  private String secret(String file, String option, Map<String, String> env, String variable)
      throws IOException {
    String value;
    if (file != null) {
      if (!Files.isRegularFile(Path.of(file))) {
        throw usageError(option + " " + file + ": no such file");
      }
      value = Files.readAllLines(Path.of(file)).stream().findFirst().orElse("").strip();
    } else {
      value = env.get(variable);
    }
    if (value == null || value.isEmpty()) {
      throw usageError("no password: pass " + option + " FILE or set $" + variable);
    }
    return value;
  }
}
