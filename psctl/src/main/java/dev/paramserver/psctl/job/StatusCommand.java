package dev.paramserver.psctl.job;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.psctl.OutputFormat;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code psctl status}: the job's state, its scaling, passes, pservers, trainers and latest events.
 */
@Command(
    name = "status",
    description =
        "Show a running job: state, pass, tasks, ETA, its scaling (once scaled), curves per"
            + " pass, pservers, trainers and the latest events (the master's /admin/job). -o json prints the view as admin-api's"
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

  @Override
  protected int runJob() throws Exception {
    AdminClient client = client();
    if (json) {
      // the answer as it is, fields this psctl does not know included
      JsonNode v = client.jobJson();
      out().println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(v));
    } else if (output.structured()) {
      // the records psctl knows: the JSON follows the schema published with this psctl
      output.print(out(), client.asJobView(client.jobJson()));
    } else {
      // read without Jackson's data binding (a third of the command's start otherwise)
      out().print(JobReport.status(client.job(), events));
    }
    out().flush();
    return 0;
  }
}
