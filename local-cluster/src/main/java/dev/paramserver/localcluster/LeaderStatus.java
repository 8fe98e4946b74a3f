package dev.paramserver.localcluster;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import tools.jackson.databind.JsonNode;

/**
 * The job as the {@link LocalCluster}'s leader master reports it on {@code /admin/status}: read
 * from the master that answers as leader, and awaited until a condition holds.
 */
final class LeaderStatus {
  private static final Duration POLL = Duration.ofMillis(500);

  private final Supervisor supervisor;
  private final LocalAdminClient admin;

  LeaderStatus(Supervisor supervisor, LocalAdminClient admin) {
    this.supervisor = supervisor;
    this.admin = admin;
  }

  /**
   * The {@code /admin/status} JSON of the master that answers as leader.
   *
   * @throws LocalClusterException naming what each master answered when none is the leader
   */
  JsonNode status() {
    List<String> answers = new ArrayList<>();
    for (ServiceProcess sp : supervisor.group(Role.MASTER)) {
      if (!sp.state().isLive() || sp.state() == ProcessState.PAUSED) {
        answers.add(sp.name() + ": " + sp.state());
        continue;
      }
      try {
        JsonNode status = admin.status(sp.httpPort());
        if (status.path("leader").asBoolean(false)) {
          return status;
        }
        answers.add(sp.name() + ": state " + status.path("state").asString("?") + ", not leader");
      } catch (IOException e) {
        answers.add(sp.name() + ": " + e.getMessage());
      }
    }
    throw new LocalClusterException("no master answers as leader (" + answers + ")");
  }

  /** The job as the leader reports it, or empty when no leader answers. */
  Optional<JobStatusView> job() {
    try {
      JsonNode s = status();
      return s.has("job") ? Optional.of(new JobStatusView(s.get("job"))) : Optional.empty();
    } catch (LocalClusterException e) {
      return Optional.empty();
    }
  }

  /**
   * Polls the leader until {@code condition} holds on the job status; a job seen FINISHED or FAILED
   * is told to the supervisor.
   *
   * @throws LocalClusterException on timeout (with the last status seen)
   */
  JobStatusView awaitJob(Predicate<JobStatusView> condition, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "no leader answered";
    while (true) {
      Optional<JobStatusView> status = job();
      if (status.isPresent()) {
        if (status.get().isFinished() || status.get().isFailed()) {
          supervisor.markJobEnded();
        }
        if (condition.test(status.get())) {
          return status.get();
        }
        last = status.get().toString();
      }
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            "job condition not reached within " + timeout.toSeconds() + " s; last status: " + last);
      }
      try {
        Thread.sleep(POLL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new LocalClusterException("interrupted while waiting on the local cluster", e);
      }
    }
  }
}
