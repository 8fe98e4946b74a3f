package dev.paramserver.psctl.job;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code psctl status}: the job's state, passes, pservers, trainers and latest events. */
@Command(
    name = "status",
    description =
        "Show a running job: state, pass, tasks, ETA, curves per pass, pservers, trainers and the"
            + " latest events (the master's /admin/job).")
public final class StatusCommand extends JobCommand {
  @Option(names = "--json", description = "Print the master's JSON answer as it is.")
  boolean json;

  @Option(
      names = "--events",
      paramLabel = "N",
      defaultValue = "10",
      description = "Events to show (default: ${DEFAULT-VALUE}).")
  int events;

  @Override
  protected int run() throws Exception {
    MasterClient client = client();
    JsonNode v = client.get("/admin/job");
    if (json) {
      // the answer as it is, fields this psctl does not know included
      out().println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(v));
    } else {
      out().print(JobReport.status(client.asJobView(v), events));
    }
    out().flush();
    return 0;
  }
}
