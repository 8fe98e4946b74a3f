package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.ObjectMapper;

class JobStatusViewTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JobStatusView view(String json) throws Exception {
    return new JobStatusView(JSON.readTree(json.replace('\'', '"')));
  }

  @Test
  void readsProto3JsonWithStringInt64AndMissingDefaults() throws Exception {
    JobStatusView job =
        view(
            "{'state':'RUNNING','pass':1,'totalPasses':3,'tasks':{'todo':4,'pending':2},"
                + "'passes':[{'records':'60000','evalLoss':0.3,'evalAccuracy':0.95,"
                + "'evalReports':2,'startedMs':'1000','endedMs':'6000'},"
                + "{'pass':1,'startedMs':'6000'}]}");

    assertThat(job.state()).isEqualTo("RUNNING");
    assertThat(job.pass()).isEqualTo(1);
    assertThat(job.totalPasses()).isEqualTo(3);
    assertThat(job.tasks()).isEqualTo(new JobStatusView.TaskCounts(4, 2, 0, 0));
    assertThat(job.failureReason()).isEmpty();
    assertThat(job.passes()).hasSize(2);
    JobStatusView.PassView first = job.passes().get(0);
    assertThat(first.pass()).isZero();
    assertThat(first.records()).isEqualTo(60000);
    assertThat(first.evalAccuracy()).isEqualTo(0.95);
    assertThat(first.evalReports()).isEqualTo(2);
    assertThat(first.endedMs()).isEqualTo(6000);
    assertThat(job.passes().get(1).records()).isZero();
    assertThat(ProgressPrinter.samplesPerSecond(first)).isEqualTo(12000.0);
  }

  @Test
  void emptyJobReadsAsUnspecified() throws Exception {
    JobStatusView job = view("{}");
    assertThat(job.state()).isEqualTo("JOB_STATE_UNSPECIFIED");
    assertThat(job.isFinished()).isFalse();
    assertThat(job.passes()).isEmpty();
  }

  @Test
  void resultLine_usesLastEvalAndRecordsOverTotalPassTime() throws Exception {
    JobStatusView job =
        view(
            "{'state':'FINISHED','pass':2,'totalPasses':2,'passes':["
                + "{'records':'1000','evalLoss':0.5,'evalAccuracy':0.8,'evalReports':1,"
                + "'startedMs':'1000','endedMs':'2000'},"
                + "{'pass':1,'records':'1000','evalLoss':0.25,'evalAccuracy':0.9375,"
                + "'evalReports':2,'startedMs':'2000','endedMs':'5000'}]}");

    assertThat(JobFollower.resultLine(job.passes(), 12.345))
        .isEqualTo(
            "RESULT accuracy=0.9375 loss=0.2500 samples_per_s=500.0 elapsed_s=12.3 train_s=4.0");
  }

  @Test
  void timeSpent_splitsStartingTrainingAndTheRest() throws Exception {
    JobStatusView job =
        view(
            "{'state':'FINISHED','passes':["
                + "{'records':'1000','startedMs':'11000','endedMs':'12000'},"
                + "{'pass':1,'records':'1000','startedMs':'12000','endedMs':'15000'}]}");

    assertThat(JobFollower.trainingSeconds(job.passes())).isEqualTo(4.0);
    assertThat(RunLocal.timeSpent(job.passes(), 1000, 16.5))
        .isEqualTo(
            "time: 10.0 s starting (until the first pass began), 4.0 s training, 2.5 s evaluating"
                + " and reporting; 16.5 s in all");
    // no pass started: all of it was starting
    assertThat(RunLocal.timeSpent(view("{}").passes(), 1000, 7.0))
        .startsWith("time: 7.0 s starting (until the first pass began), 0.0 s training");
  }

  @Test
  void progressPrinter_printsEachPassOnceWithItsEvaluation() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ProgressPrinter printer = new ProgressPrinter(new PrintStream(bytes, true, "UTF-8"));
    String ended =
        "{'state':'RUNNING','pass':1,'totalPasses':3,'tasks':{'todo':5},'passes':["
            + "{'records':'600','startedMs':'1000','endedMs':'2000'%s}]}";

    printer.update(view(String.format(ended, "")), 0);
    printer.update(
        view(String.format(ended, ",'evalLoss':0.312,'evalAccuracy':0.951,'evalReports':1")),
        1_000_000_000L);
    printer.update(
        view(String.format(ended, ",'evalLoss':0.312,'evalAccuracy':0.951,'evalReports':2")),
        2_000_000_000L);

    String out = bytes.toString(StandardCharsets.UTF_8);
    assertThat(out)
        .contains("pass 1/3 done: records=600 loss=0.3120 accuracy=0.9510 samples/s=600")
        .contains("pass 2/3: tasks todo=5 pending=0 done=0 failed=0");
    assertThat(out.split("pass 1/3 done", -1)).hasSize(2);
    assertThat(out.split("tasks todo", -1)).hasSize(2);
  }
}
