package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.psctl.demo.DemoData;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The whole system as separate processes: a real etcd, one master, two pservers and two trainers
 * train softmax regression on demo data; the accuracy reached, the master's accounting and the
 * exported model are checked.
 */
class DistributedTrainingTest {
  @TempDir Path dir;

  @Test
  void softmaxOnTwoPserversAndTwoTrainers_reachesAccuracyAndAccountsForEveryTask()
      throws Exception {
    Path data = dir.resolve("data");
    DemoData.Result demo =
        DemoData.generate(
            data, DemoData.Options.builder().train(20000).test(4000).shards(2).build());
    int passes = 2;
    Path model = dir.resolve("run").resolve("model.pb");
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("e2e")
                .masters(1)
                .pservers(2)
                .trainers(2)
                .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
                .property(
                    Role.TRAINER, "paramserver.trainer.train-data", data + "/train-*.recordio")
                .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
                .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
                .property(Role.TRAINER, "paramserver.trainer.model-output", model.toString())
                .build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && !s.passes().isEmpty()
                          && s.passes().get(s.passes().size() - 1).evalReports() >= 2,
              Duration.ofMinutes(5));
      assertThat(end.state())
          .as("job state; failure: %s", end.failureReason())
          .isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, passes);
      JobStatusView.PassView last = end.passes().get(passes - 1);
      assertThat(last.evalAccuracy()).as("test accuracy after the last pass").isGreaterThan(0.90);
      assertThat(last.evalLoss()).isLessThan(0.5);

      // the final model was written by one trainer, and psctl evaluate reproduces the accuracy
      assertThat(model).exists();
      StringWriter out = new StringWriter();
      CommandLine cl = Psctl.commandLine();
      cl.setOut(new PrintWriter(out, true));
      int code =
          cl.execute("evaluate", "--model", model.toString(), "--data", demo.testFile().toString());
      assertThat(code).isZero();
      Matcher m = Pattern.compile("accuracy=([0-9.]+)").matcher(out.toString());
      assertThat(m.find()).as(out.toString()).isTrue();
      assertThat(Double.parseDouble(m.group(1)))
          .isCloseTo(last.evalAccuracy(), org.assertj.core.data.Offset.offset(0.005));
    }
    assertThat(Files.exists(dir.resolve("run").resolve("cluster.json"))).isTrue();
  }
}
