package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.testsupport.Poll;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Push answers cut to the rows another writer changed ({@code writer_tag}), on real processes: two
 * Java trainers train sparse-lr with plain SGD (their row caches' local steps are the pservers'
 * steps) on a Zipf click log against two pservers. Each pserver leaves out of its answers the rows
 * only the pushing trainer changed since its previous push, and lists the rows the other trainer
 * changed (the hot ids both train, and rows new to the pserver); pulls of rows a trainer holds
 * leave out those only it changed the same way, and ride on the push streams (no PullParameters
 * call each); every task of both passes is done once, and the model the pservers hold learned the
 * hidden one.
 */
@Timeout(420)
class ChangedRowsAnswersEndToEndTest {
  private static final Pattern ROWS =
      Pattern.compile(
          "paramserver_pserver_(answer|pull)_rows_total\\{[^}]*rows=\"(listed|left_out)\"[^}]*}"
              + " ([0-9.E]+)");

  private static final Pattern STREAM_PULLS =
      Pattern.compile(
          "paramserver_pserver_stream_pulls_total\\{[^}]*outcome=\"answered\"[^}]*} ([0-9.E]+)");

  @TempDir Path dir;

  @Test
  void twoSgdTrainers_getOnlyEachOthersRowsBack_andTheModelLearnsTheHiddenOne() throws Exception {
    int passes = 2;
    var spec =
        ClickJobs.sparseLr(dir, 6000, 1000)
            .job("changed-rows")
            .masters(1)
            .pservers(2)
            .trainers(2)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
            .property(
                Role.TRAINER,
                "paramserver.trainer.model-output",
                dir.resolve("model.pb").toString());
    double listed = 0;
    double leftOut = 0;
    double pullLeftOut = 0;
    double streamPulls = 0;
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      JobStatusView end;
      try {
        end =
            cluster.awaitJob(
                s -> s.isFailed() || s.isFinished() && s.passes().size() == passes,
                Duration.ofMinutes(4));
        assertThat(end.state()).as("job (%s)", end.failureReason()).isEqualTo("FINISHED");
      } catch (RuntimeException | AssertionError e) {
        System.err.println(ProcessLogs.largestFiles(dir, 8));
        System.err.println(ProcessLogs.tails(cluster, Role.TRAINER, 60));
        System.err.println(ProcessLogs.tails(cluster, Role.PSERVER, 40));
        System.err.println(ProcessLogs.tails(cluster, Role.MASTER, 40));
        throw e;
      }
      Jobs.assertEveryTaskDoneInEveryPass(end, passes);
      for (int ps = 0; ps < 2; ps++) {
        String metrics = Jobs.scrapePrometheus(cluster.process(Role.PSERVER, ps).httpPort());
        Matcher m = ROWS.matcher(metrics);
        int found = 0;
        while (m.find()) {
          found++;
          double n = Double.parseDouble(m.group(3));
          if (m.group(1).equals("pull")) {
            pullLeftOut += m.group(2).equals("left_out") ? n : 0;
          } else if (m.group(2).equals("listed")) {
            listed += n;
          } else {
            leftOut += n;
          }
        }
        assertThat(found).as("answer and pull rows counted by pserver %d", ps).isEqualTo(4);
        Matcher answered = STREAM_PULLS.matcher(metrics);
        assertThat(answered.find()).as("pulls on streams counted by pserver %d", ps).isTrue();
        streamPulls += Double.parseDouble(answered.group(1));
      }
    }
    assertThat(leftOut).as("rows only the pushing trainer changed, left out").isPositive();
    assertThat(listed).as("rows the other trainer (or nobody yet) changed, listed").isPositive();
    assertThat(streamPulls).as("pulls answered on the push streams").isPositive();
    assertThat(pullLeftOut)
        .as("held rows older than the staleness bound that only the pulling trainer changed")
        .isPositive();
    Path model = dir.resolve("model.pb");
    Poll.until(Duration.ofSeconds(60), () -> Files.exists(model), "the model written");
    double auc =
        ModelsEndToEndTest.evaluated(model, dir.resolve("data").resolve("test-*.recordio"), "auc");
    assertThat(auc).as("test AUC").isGreaterThan(0.7);
  }
}
