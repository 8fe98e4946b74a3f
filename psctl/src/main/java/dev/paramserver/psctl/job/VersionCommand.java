package dev.paramserver.psctl.job;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.BuildInfo;
import dev.paramserver.adminapi.ServiceStatus;
import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import java.io.IOException;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code psctl version}: this build's version and commit, and the leader master's (its {@code GET
 * /admin/status}) when the options or the environment name one. An unreachable master is reported
 * and exits {@link ExitCodes#UNREACHABLE}, after the client's version is printed.
 */
@Command(
    name = "version",
    description = {
      "Show psctl's version and commit and, when a master is named (--master, --etcd,"
          + " PSCTL_MASTER, PSCTL_ETCD), the leader master's.",
      "Exit code 0, or 4 when the master named cannot be reached (psctl's version is printed"
          + " all the same)."
    })
public final class VersionCommand extends JobCommand {
  @Mixin OutputFormat output;

  @Option(names = "--client", description = "Only psctl's version: do not ask the master.")
  boolean clientOnly;

  /** What {@code -o json} prints. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record Versions(BuildInfo client, Server server, String serverError) {}

  /** The master that answered. */
  record Server(
      String address, String role, String state, String identity, String version, String commit) {}

  @Override
  protected int runJob() throws Exception {
    BuildInfo client = BuildInfo.current();
    PrintWriter out = out();
    if (!output.structured()) {
      out.println("psctl " + client.version() + " (commit " + client.commit() + ")");
      out.flush();
    }
    if (clientOnly || !hasTarget()) {
      if (output.structured()) {
        output.print(out, new Versions(client, null, null));
      }
      return ExitCodes.OK;
    }
    Server server = null;
    String error = null;
    try {
      AdminClient admin = client();
      ServiceStatus s = admin.status();
      server =
          new Server(
              admin.base(),
              s.role(),
              s.state(),
              s.identity(),
              known(s.version()),
              known(s.commit()));
    } catch (IOException e) {
      if (!PsctlCommand.isUnreachable(e)) {
        throw e;
      }
      error = e.getMessage();
    }
    if (output.structured()) {
      output.print(out, new Versions(client, server, error));
    } else if (server != null) {
      out.println(
          "master "
              + server.version()
              + " (commit "
              + server.commit()
              + ") at "
              + server.address()
              + ", "
              + server.state());
    } else {
      out.println("master: unreachable: " + error);
    }
    out.flush();
    return server != null ? ExitCodes.OK : ExitCodes.UNREACHABLE;
  }

  /** A master older than the version field reports none. */
  private static String known(String s) {
    return s == null || s.isBlank() ? "unknown" : s;
  }
}
