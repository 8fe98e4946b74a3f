package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.Psctl;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The demo job (softmax on the demo data, two trainers) scaled from 2 to 3 to 2 pservers with
 * {@code psctl scale} while it trains ends within half a point of accuracy of the same job on a
 * fixed 2 pservers, with every task of every pass done; the emptied pserver exits 0.
 */
class ElasticScalingEndToEndTest {
  private static final int PASSES = 100;

  @TempDir Path dir;

  private record Result(int code, String out, String err) {}

  private static Result psctl(Map<String, String> env, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Psctl.commandLine(env);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return new Result(cl.execute(args), out.toString(), err.toString());
  }

  private LocalCluster cluster(String job, DemoData.Result demo) {
    return new LocalCluster(
        Jobs.spec(dir.resolve(job))
            .job(job)
            .masters(1)
            .pservers(2)
            .trainers(2)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
            // fewer, larger moves: the scaling takes seconds, the job a minute or more
            .property(Role.MASTER, "paramserver.master.scaling.slots-per-move", "2048")
            // a short drain, so the job still trains once pserver 2 is gone (ElasticExactlyOnceTest
            // drains for the default)
            .property(Role.MASTER, "paramserver.master.scaling.drain-time", "2s")
            .property(
                Role.TRAINER,
                "paramserver.trainer.train-data",
                dir.resolve("data") + "/train-*.recordio")
            .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
            .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
            // a pserver started before the job grows looks for its index every second
            .property(Role.PSERVER, "paramserver.pserver.register-timeout", "1s")
            .build());
  }

  private static JobStatusView awaitEnd(LocalCluster cluster) {
    return cluster.awaitJob(
        s ->
            s.isFailed()
                || s.isFinished()
                    && s.passes().size() == PASSES
                    && s.passes().get(PASSES - 1).evalReports() >= 1,
        Duration.ofMinutes(8));
  }

  @Test
  void demoJobScaledTwoThreeTwoWhileTraining_accuracyWithinHalfAPointOfAFixedJob()
      throws Exception {
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder().train(30000).test(4000).shards(2).build());

    double fixedAccuracy;
    try (LocalCluster fixed = cluster("fixed", demo)) {
      fixed.start();
      JobStatusView end = awaitEnd(fixed);
      assertThat(end.state())
          .as("fixed job; failure: %s", end.failureReason())
          .isEqualTo("FINISHED");
      fixedAccuracy = end.passes().get(PASSES - 1).evalAccuracy();
    }

    try (LocalCluster cluster = cluster("elastic", demo)) {
      cluster.start();
      // the third pserver starts with the job and waits for its index (ps_desired is 2)
      cluster.addProcess(Role.PSERVER);
      cluster.awaitJob(
          s -> s.isFailed() || !s.passes().isEmpty() && s.passes().get(0).tasks().done() > 0,
          Duration.ofMinutes(3));
      Map<String, String> env =
          Map.of(
              "PSCTL_MASTER",
              "http://127.0.0.1:" + cluster.process(Role.MASTER, 0).httpPort(),
              "PSCTL_TOKEN",
              cluster.adminToken());
      long t0 = System.nanoTime();
      System.out.printf(
          "scaling starts in pass %d%n", cluster.jobStatus().orElseThrow().passes().size());
      cluster.addProcess(Role.PSERVER);
      Result grow = psctl(env, "scale", "--pservers", "3", "--wait-minutes", "3");
      assertThat(grow.code()).as("psctl scale 3: %s%s", grow.out(), grow.err()).isZero();
      assertThat(grow.out()).contains("done: 3 pservers");
      assertThat(committedMoves(grow.out())).as(grow.out()).isPositive();

      System.out.printf(
          "grown after %d ms, in pass %d%n",
          (System.nanoTime() - t0) / 1_000_000, cluster.jobStatus().orElseThrow().passes().size());
      Result shrink = psctl(env, "scale", "--pservers", "2", "--wait-minutes", "3");
      assertThat(shrink.code()).as("psctl scale 2: %s%s", shrink.out(), shrink.err()).isZero();
      assertThat(shrink.out()).contains("done: 2 pservers");
      cluster.awaitState(Role.PSERVER, 2, ProcessState.STOPPED, Duration.ofMinutes(2));
      JobStatusView afterScaling = cluster.jobStatus().orElseThrow();
      System.out.printf(
          "shrunk after %d ms, in pass %d%n",
          (System.nanoTime() - t0) / 1_000_000, afterScaling.passes().size());
      assertThat(afterScaling.isFinished())
          .as(
              "the job still trains once scaled back (%d of %d passes)",
              afterScaling.passes().size(), PASSES)
          .isFalse();

      JobStatusView end = awaitEnd(cluster);
      assertThat(end.state())
          .as("elastic job; failure: %s", end.failureReason())
          .isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
      double accuracy = end.passes().get(PASSES - 1).evalAccuracy();
      System.out.printf(
          "demo job scaled 2 -> 3 -> 2 during pass %d of %d: accuracy %.4f, fixed 2 pservers %.4f%n%s%s",
          afterScaling.passes().size(), PASSES, accuracy, fixedAccuracy, grow.out(), shrink.out());
      assertThat(Math.abs(accuracy - fixedAccuracy))
          .as("accuracy %.4f scaled vs %.4f fixed", accuracy, fixedAccuracy)
          .isLessThanOrEqualTo(0.005);
    }
  }

  private static int committedMoves(String out) {
    Matcher m = Pattern.compile("(?m)^move \\S+: pserver").matcher(out);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }
}
