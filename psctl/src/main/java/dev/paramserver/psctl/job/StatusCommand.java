package dev.paramserver.psctl.job;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.psctl.command.OutputFormat;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * {@code psctl status}: the job's state, its scaling, passes, pservers, serving replicas, trainers
 * and latest events.
 */
@Command(
    name = "status",
    description =
        "Show a running job: state, pass, tasks, ETA, its scaling (once scaled), curves per"
            + " pass, pservers, serving replicas, trainers and the latest events (the master's /admin/job). -o json prints the view as admin-api's"
            + " published schema (GET /admin/job/schema) describes it.")
public final class StatusCommand extends JobCommand {
  /** The default of {@code --events}. */
  static final int DEFAULT_EVENTS = 10;

  @Option(
      names = "--json",
      description = "Print the master's JSON answer as it is (fields newer than psctl included).")
  boolean json;

  @Mixin OutputFormat output;

  @Option(
      names = "--events",
      paramLabel = "N",
      defaultValue = "" + DEFAULT_EVENTS,
      description = "Events to show in text (default: ${DEFAULT-VALUE}).")
  int events;

  /** The default of {@code --passes} in text. */
  static final int DEFAULT_PASSES = 10;

  @Option(
      names = "--passes",
      paramLabel = "N|all",
      description =
          "The latest passes to show, or all (default: "
              + DEFAULT_PASSES
              + " in text, all with --json or -o). Only these are asked of the master"
              + " (GET /admin/job?passes=N), so status costs the same however long the job ran.")
  String passes;

  /** What {@code --passes} asks for: a count, null for every pass; -1 when it is not valid. */
  static Integer passes(String value) {
    return value.equals("all") ? null : QuickCommands.number(value);
  }

  @Override
  protected int runJob() throws Exception {
    AdminClient client = client();
    boolean text = !json && !output.structured();
    Integer latest = passes == null ? (text ? DEFAULT_PASSES : null) : passes(passes);
    if (latest != null && latest < 0) {
      throw usageError("--passes expects a count of 0 or more or 'all', got '" + passes + "'");
    }
    if (json) {
      // the answer as it is, fields this psctl does not know included
      JsonNode v = latest == null ? client.jobJson() : client.jobJson(latest);
      out().println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(v));
    } else if (!text) {
      // the records psctl knows: the JSON follows the schema published with this psctl
      JsonNode v = latest == null ? client.jobJson() : client.jobJson(latest);
      output.print(out(), client.asJobView(v));
    } else {
      // read without Jackson's data binding (a third of the command's start otherwise)
      JobView v = latest == null ? client.job() : client.job(latest);
      out().print(JobReport.status(v, events));
    }
    out().flush();
    return 0;
  }
}
