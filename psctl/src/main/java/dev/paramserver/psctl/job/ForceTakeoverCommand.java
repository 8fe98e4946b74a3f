package dev.paramserver.psctl.job;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.ForcedTakeover;
import dev.paramserver.psctl.command.OutputFormat;
import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code psctl force-takeover}: lets a replicated shard that waits for its old primary's log be
 * served without it (docs/explanation/replicas.md), printing what may be lost; writes nothing
 * without {@code --yes}.
 */
@Command(
    name = "force-takeover",
    description =
        "Let a replicated shard whose primary ended while answering pushes without its backup be"
            + " served without that primary's log: prints what may be lost; with --yes records the"
            + " forced takeover (audited in etcd), and the backup (or, with none, the next pserver"
            + " to register, from the checkpoint) takes the shard over.")
public final class ForceTakeoverCommand extends JobCommand {
  @Mixin OutputFormat output;

  @Option(names = "--shard", required = true, description = "The shard (pserver index).")
  int shard;

  @Option(
      names = "--yes",
      description = "Force it (without: only print what it would do and may lose).")
  boolean yes;

  @Option(
      names = "--reason",
      description = "Why, recorded with who forced it (audit).",
      defaultValue = "")
  String reason;

  @Override
  protected int runJob() throws Exception {
    Map<String, String> env = env();
    String etcd = target.etcd(env);
    if (etcd == null) {
      throw usageError(
          "force-takeover writes to etcd: pass --etcd ENDPOINTS and --job NAME (or set "
              + JobTarget.ETCD_ENV
              + ")");
    }
    if (shard < 0) {
      throw usageError("--shard must be 0 or more, got " + shard);
    }
    // TLS and authentication (--etcd-ca, --etcd-user) as every psctl command that reads etcd
    EtcdSettings settings = etcdSettings(etcd, env);
    try (EtcdCoordinator c = EtcdCoordinator.connect(settings)) {
      ForcedTakeover.Plan plan;
      try {
        plan = ForcedTakeover.plan(c.kv(), c.keys(), shard);
      } catch (IllegalStateException e) {
        err().println("force-takeover: " + e.getMessage());
        err().flush();
        return 1;
      }
      Map<String, Object> result = new LinkedHashMap<>();
      result.put("shard", shard);
      result.put("risk", plan.risk());
      result.put("forced", yes);
      if (!output.structured()) {
        out().println(plan.risk());
      }
      if (!yes) {
        if (output.structured()) {
          output.print(out(), result);
        } else {
          out().println("nothing forced: run again with --yes to force it");
          out().flush();
        }
        return 0;
      }
      String who = who();
      String audit = ForcedTakeover.force(c.kv(), c.keys(), plan, who, System.currentTimeMillis());
      result.put("by", who);
      result.put("audit", audit);
      if (output.structured()) {
        output.print(out(), result);
      } else {
        out().println("forced by " + who + "; audit record " + audit);
        out().flush();
      }
      return 0;
    }
  }

  private String who() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      host = "unknown-host";
    }
    String user = System.getProperty("user.name", "unknown");
    return user + "@" + host + (reason.isBlank() ? "" : " (" + reason.strip() + ")");
  }
}
