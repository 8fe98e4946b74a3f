package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterEvent;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.testsupport.Poll;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * etcd outages and a trainer paused past its lease, on real processes (one master, two pservers,
 * two trainers; every lease 4 s). After each fault every lease holder must take a new lease and go
 * on: the job trains again within the outage plus 10 s, a killed trainer's tasks come back within
 * its lease TTL plus 1 s (never by a task timeout), every trainer exits with code 0 once the job is
 * done, and every task of every pass is trained exactly once (with the push accounting of the job).
 * The stalls measured are printed ({@code OUTAGE ...}) and appended to {@code
 * target/outage-report.md}.
 */
class EtcdOutageRecoveryTest {
  private static final Duration TTL = Duration.ofSeconds(4);

  /** What the job may take after an outage, on top of the outage itself. */
  private static final Duration STALL_BOUND = Duration.ofSeconds(10);

  private static final Pattern TIMED_OUT = Pattern.compile("task\\(s\\) timed out and went back");

  // kept when a test fails: the processes' logs are under <dir>/<job>/logs
  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  static Path dir;

  static DemoData.Result demo;

  @BeforeAll
  static void data() throws Exception {
    demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder()
                .train(24000)
                .test(2000)
                .shards(2)
                .recordsPerChunk(200)
                .build());
  }

  private static ClusterSpec spec(String name, int passes) throws IOException {
    ClusterSpec.Builder b = Jobs.spec(dir.resolve(name));
    for (Role r : new Role[] {Role.MASTER, Role.PSERVER, Role.TRAINER}) {
      b.property(r, "paramserver.etcd.lease-ttl", TTL.toSeconds() + "s");
    }
    return b.job(name)
        .masters(1)
        .pservers(2)
        .trainers(2)
        .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
        // long enough that a departure the master forgot shows as a stall past the bound
        .property(Role.MASTER, "paramserver.master.task-timeout", "30s")
        .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "2s")
        .property(
            Role.TRAINER,
            "paramserver.trainer.train-data",
            dir.resolve("data") + "/train-*.recordio")
        .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
        .property(Role.TRAINER, "paramserver.trainer.batch-size", "32")
        .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
        // each trainer exits once the test took its final push counts (or after 60 s)
        .property(Role.TRAINER, "paramserver.trainer.exit-linger", "60s")
        .build();
  }

  @Test
  void etcdPausedPastEveryLease_thenATrainerPausedPastItsTtl_everyHolderRenews_andAllExitZero()
      throws Exception {
    int passes = 7;
    List<ClusterEvent> events = new CopyOnWriteArrayList<>();
    try (LocalCluster cluster = new LocalCluster(spec("outage-renew", passes))) {
      cluster.addListener(events::add);
      cluster.start();

      awaitJoined(cluster);
      awaitDone(cluster, 10);
      Duration outage = Duration.ofSeconds(8); // past every lease (4 s) and its keep-alives
      double stall = etcdOutage(cluster, outage, () -> {});
      report("etcd-paused-past-every-lease", outage, stall, null);
      assertThat(stall)
          .as("seconds from the start of an %s etcd pause until tasks are finished again", outage)
          .isLessThanOrEqualTo(seconds(outage.plus(STALL_BOUND)));
      for (int t = 0; t < 2; t++) {
        int trainer = t;
        // the job may train again (through the other trainer) before this one's renewal is done
        Poll.until(
            Duration.ofSeconds(30),
            () -> log(cluster, Role.TRAINER, trainer).contains("renewed its etcd lease"),
            "trainer-" + trainer + " taking a new lease and registering again");
      }

      awaitDone(cluster, totalDone(cluster) + 10);
      Instant paused = Instant.now();
      Duration pause = TTL.multipliedBy(2);
      cluster.pauseProcess(Role.TRAINER, 1);
      try {
        // its lease ends in etcd: the master takes its tasks back and the other trainer goes on
        Poll.until(
            pause.plusSeconds(5),
            () -> Duration.between(paused, Instant.now()).compareTo(pause) >= 0,
            "the pause lasting " + pause);
      } finally {
        cluster.resume(Role.TRAINER, 1);
      }
      // the push accounting reads a trainer from the moment it is resumed (the supervisor shows
      // it STARTING until its next probe): a read that skipped it summed the other trainer alone
      assertThat(PushCounts.isRead(cluster.process(Role.TRAINER, 1)))
          .as(
              "trainer-1's counts read right after its resume (%s)",
              cluster.process(Role.TRAINER, 1))
          .isTrue();
      double tasksBack =
          Duration.between(paused, awaitTakenBack(cluster, "trainer-1", paused)).toMillis()
              / 1000.0;
      Poll.until(
          Duration.ofSeconds(30),
          () -> countOf(log(cluster, Role.TRAINER, 1), "renewed its etcd lease") >= 2,
          "trainer-1 renewing its lease after its pause");
      report("trainer-paused-past-its-ttl", pause, Double.NaN, tasksBack);
      assertThat(tasksBack)
          .as("seconds from the pause until the master took the paused trainer's tasks back")
          .isLessThanOrEqualTo(TTL.toSeconds() + 1.0);

      finish(cluster, passes, events, true, List.of());
    }
  }

  @Test
  void etcdPaused10s_thenATrainerKilledRightAfter_itsTasksReturnWithinTheTtl_andAllExitZero()
      throws Exception {
    int passes = 5;
    List<ClusterEvent> events = new CopyOnWriteArrayList<>();
    try (LocalCluster cluster = new LocalCluster(spec("outage-kill", passes))) {
      cluster.addListener(events::add);
      cluster.start();

      awaitJoined(cluster);
      awaitDone(cluster, 10);
      Duration outage = Duration.ofSeconds(10);
      Instant[] killed = new Instant[1];
      double stall =
          etcdOutage(
              cluster,
              outage,
              () -> {
                killed[0] = Instant.now();
                cluster.kill(Role.TRAINER, 0); // the watchdog starts it again
              });
      // the killed trainer's tasks went back (at the master's new start of service, or when its
      // registration ended), not by a task timeout
      Instant back = awaitTakenBack(cluster, "trainer-0", killed[0].minus(outage));
      double tasksBack = Duration.between(killed[0], back).toMillis() / 1000.0;
      report("etcd-paused-10s-then-trainer-killed", outage, stall, tasksBack);
      assertThat(stall)
          .as("seconds from the start of a %s etcd pause until tasks are finished again", outage)
          .isLessThanOrEqualTo(seconds(outage.plus(STALL_BOUND)));
      assertThat(tasksBack)
          .as("seconds from the kill until the master took the killed trainer's tasks back")
          .isLessThanOrEqualTo(TTL.toSeconds() + 1.0);
      Poll.until(
          Duration.ofSeconds(30),
          () -> log(cluster, Role.TRAINER, 1).contains("renewed its etcd lease"),
          "the surviving trainer taking a new lease and registering again");

      finish(cluster, passes, events, false, List.of("trainer-0"));
    }
  }

  /**
   * Waits until both trainers hold a lease (on a loaded machine one may start well after the other
   * took the first tasks): the outage must find every holder with one to renew.
   */
  private static void awaitJoined(LocalCluster cluster) throws InterruptedException {
    Poll.until(
        Duration.ofMinutes(2),
        () ->
            trainers(cluster).size() == 2
                && trainers(cluster).stream().allMatch(p -> joined(cluster, p)),
        "both trainers joined the job");
  }

  private static boolean joined(LocalCluster cluster, ProcessInfo p) {
    try {
      String state = cluster.adminStatus(Role.TRAINER, p.index()).path("state").asText();
      return List.of("WAITING_FOR_PSERVERS", "INITIALISING", "TRAINING", "EVALUATING")
          .contains(state);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * Pauses etcd for {@code outage}, resumes it, runs {@code afterResume}, and returns the seconds
   * from the pause until tasks are finished again (two more than at the resume).
   */
  private static double etcdOutage(LocalCluster cluster, Duration outage, Runnable afterResume)
      throws InterruptedException {
    long t0 = System.nanoTime();
    cluster.pauseEtcd();
    try {
      Poll.until(
          outage.plusSeconds(5),
          () -> System.nanoTime() - t0 >= outage.toNanos(),
          "the outage lasting " + outage);
    } finally {
      cluster.resumeEtcd();
    }
    afterResume.run();
    long atResume = totalDone(cluster);
    awaitDone(cluster, atResume + 2);
    return (System.nanoTime() - t0) / 1e9;
  }

  /** The end of a job: finished, trained exactly once, counted, every trainer exited with 0. */
  private static void finish(
      LocalCluster cluster,
      int passes,
      List<ClusterEvent> events,
      boolean pushesCounted,
      List<String> killed)
      throws Exception {
    JobStatusView end =
        cluster.awaitJob(
            v ->
                v.isFailed()
                    || v.isFinished()
                        && v.passes().size() == passes
                        && v.passes().get(passes - 1).evalReports() >= 1,
            Duration.ofMinutes(3));
    assertThat(end.state()).as("job state (%s)", end.failureReason()).isEqualTo("FINISHED");
    Jobs.assertEveryTaskDoneInEveryPass(end, passes);
    assertThat(log(cluster, Role.MASTER, 0))
        .as("the master's log: no task waited for its timeout")
        .doesNotContainPattern(TIMED_OUT);

    // every trainer is through (it lingers for one scrape): then its counts are final
    Poll.until(
        Duration.ofSeconds(90),
        () -> trainers(cluster).stream().allMatch(p -> trainingOver(cluster, p)),
        "every trainer through with training");
    // a trainer that exited (and was restarted) took its counts with it: say so before counting
    assertThat(unexpectedExits(events, killed)).as("trainers that exited with an error").isEmpty();
    PushCounts counts = PushCounts.read(cluster); // the scrape each trainer waits for to exit
    System.out.println("OUTAGE pushes " + counts);
    assertThat(counts.dropped()).as("dropped pushes (%s)", counts).isZero();
    if (pushesCounted) {
      assertThat(counts.unread())
          .as("trainers whose push counts could not be read (%s)", counts)
          .isEmpty();
      assertThat(counts.applied())
          .as("each pserver's updates vs the pushes its trainers had acknowledged (%s)", counts)
          .isEqualTo(counts.acknowledged());
    }
    Poll.until(
        Duration.ofSeconds(90),
        () -> trainers(cluster).stream().allMatch(p -> p.state() == ProcessState.FINISHED),
        "every trainer exited with code 0 after the job: " + trainers(cluster));
    assertThat(unexpectedExits(events, killed)).as("trainers that exited with an error").isEmpty();
  }

  /** The supervisor's messages of trainers, other than {@code killed}, that failed or restarted. */
  private static List<String> unexpectedExits(List<ClusterEvent> events, List<String> killed) {
    List<String> unexpected = new ArrayList<>();
    for (ClusterEvent e : events) {
      boolean trainerExit =
          e.process().startsWith("trainer-")
              && (e.type() == ClusterEvent.Type.RESTARTING || e.type() == ClusterEvent.Type.FAILED);
      if (trainerExit && !killed.contains(e.process())) {
        unexpected.add(e.message());
      }
    }
    return unexpected;
  }

  private static List<ProcessInfo> trainers(LocalCluster cluster) {
    return cluster.processes().stream().filter(p -> p.role() == Role.TRAINER).toList();
  }

  private static boolean trainingOver(LocalCluster cluster, ProcessInfo p) {
    if (p.state() == ProcessState.FINISHED) {
      return true;
    }
    try {
      return "FINISHED".equals(cluster.adminStatus(Role.TRAINER, p.index()).path("state").asText());
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * The time of the master's first log line, at or after {@code since}, saying it took back the
   * tasks of {@code trainer}; waits up to a minute for it.
   */
  private static Instant awaitTakenBack(LocalCluster cluster, String trainer, Instant since)
      throws InterruptedException {
    Pattern line =
        Pattern.compile(
            "^(\\S+).*trainer '" + Pattern.quote(trainer) + "' .*task\\(s\\) went back",
            Pattern.MULTILINE);
    Instant[] found = new Instant[1];
    Poll.until(
        Duration.ofMinutes(1),
        () -> {
          var m = line.matcher(log(cluster, Role.MASTER, 0));
          while (m.find()) {
            Optional<Instant> at = timeOf(m.group(1));
            if (at.isPresent() && !at.get().isBefore(since)) {
              found[0] = at.get();
              return true;
            }
          }
          return false;
        },
        "the master taking back the tasks of " + trainer);
    return found[0];
  }

  private static Optional<Instant> timeOf(String stamp) {
    try {
      return Optional.of(OffsetDateTime.parse(stamp).toInstant());
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }

  private static String log(LocalCluster cluster, Role role, int index) {
    try {
      return Files.readString(cluster.process(role, index).log(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  private static int countOf(String text, String what) {
    int n = 0;
    for (int at = text.indexOf(what); at >= 0; at = text.indexOf(what, at + 1)) {
      n++;
    }
    return n;
  }

  private static long awaitDone(LocalCluster cluster, long tasks) {
    JobStatusView v =
        cluster.awaitJob(
            s -> s.isFinished() || s.isFailed() || totalDone(s) >= tasks, Duration.ofMinutes(2));
    assertThat(v.isFinished() || v.isFailed())
        .as("the job ended (%s) before %d tasks were done; give it more passes", v.state(), tasks)
        .isFalse();
    return totalDone(v);
  }

  private static long totalDone(LocalCluster cluster) {
    return cluster.jobStatus().map(EtcdOutageRecoveryTest::totalDone).orElse(0L);
  }

  private static long totalDone(JobStatusView s) {
    long done = 0;
    for (JobStatusView.PassView p : s.passes()) {
      done += p.tasks().done();
    }
    return Math.max(done, s.tasks().done());
  }

  private static double seconds(Duration d) {
    return d.toMillis() / 1000.0;
  }

  private static void report(String scenario, Duration fault, double stall, Double tasksBack)
      throws IOException {
    String line =
        String.format(
            Locale.ROOT,
            "| %s | %d s | %s | %s |%n",
            scenario,
            fault.toSeconds(),
            Double.isNaN(stall) ? "-" : String.format(Locale.ROOT, "%.1f s", stall),
            tasksBack == null ? "-" : String.format(Locale.ROOT, "%.1f s", tasksBack));
    System.out.print("OUTAGE " + line);
    Path out = Path.of("target", "outage-report.md");
    Files.createDirectories(out.getParent());
    if (!Files.exists(out)) {
      Files.writeString(
          out,
          "| scenario | fault | from the fault's start until tasks finish again | killed"
              + " trainer's tasks back after the kill |\n| --- | --- | --- | --- |\n");
    }
    Files.writeString(out, line, java.nio.file.StandardOpenOption.APPEND);
  }
}
