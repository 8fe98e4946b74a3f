package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

class JobFollowerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration POLL = Duration.ofMillis(1);

  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

  /** Answers the scripted statuses in turn (null = no leader), then repeats the last one. */
  private static final class Script implements JobFollower.Source {
    private final List<String> statuses;
    private final List<ProcessInfo> processes = new ArrayList<>();
    private int next;
    final AtomicInteger ended = new AtomicInteger();

    Script(String... statuses) {
      this.statuses = List.of(statuses);
      for (int i = 0; i < 2; i++) {
        processes.add(
            new ProcessInfo(
                Role.TRAINER, i, 100 + i, 1, 0, Path.of("t.log"), ProcessState.RUNNING, 0));
      }
    }

    @Override
    public JsonNode leaderStatus() {
      String s = statuses.get(Math.min(next++, statuses.size() - 1));
      if (s.equals("none")) {
        throw new LocalClusterException("no master answers as leader (master-0: refused)");
      }
      try {
        return JSON.readTree(("{'leader':true,'job':" + s + "}").replace('\'', '"'));
      } catch (Exception e) {
        throw new IllegalArgumentException(s, e);
      }
    }

    @Override
    public List<ProcessInfo> processes() {
      return processes;
    }

    @Override
    public void jobEnded() {
      ended.incrementAndGet();
    }
  }

  private static String pass(int n, long records, long start, long end, String eval) {
    return "{'pass':"
        + n
        + ",'records':'"
        + records
        + "','startedMs':'"
        + start
        + "','endedMs':'"
        + end
        + "'"
        + eval
        + "}";
  }

  private static String eval(double loss, double acc, int reports) {
    return ",'evalLoss':" + loss + ",'evalAccuracy':" + acc + ",'evalReports':" + reports;
  }

  private JobFollower follower(Duration evalWait) {
    return new JobFollower(script, out, POLL, evalWait);
  }

  private Script script;

  @Test
  void follow_printsPassesAndReturnsResultOnceTheLastPassIsEvaluated() {
    String p0 = pass(0, 1000, 1000, 2000, eval(0.5, 0.8, 2));
    script =
        new Script(
            "none",
            "{'state':'WAITING_FOR_DATASET','totalPasses':2}",
            "{'state':'RUNNING','totalPasses':2,'tasks':{'todo':3,'pending':2}}",
            "{'state':'RUNNING','pass':1,'totalPasses':2,'passes':[" + p0 + "]}",
            "{'state':'FINISHED','pass':2,'totalPasses':2,'passes':["
                + p0
                + ","
                + pass(1, 1000, 2000, 5000, "")
                + "]}",
            "{'state':'FINISHED','pass':2,'totalPasses':2,'passes':["
                + p0
                + ","
                + pass(1, 1000, 2000, 5000, eval(0.25, 0.9375, 1))
                + "]}");

    String result =
        follower(Duration.ofSeconds(30)).follow(System.nanoTime(), Duration.ofSeconds(30));

    assertThat(result)
        .matches(
            "RESULT accuracy=0\\.9375 loss=0\\.2500 samples_per_s=500\\.0 elapsed_s=\\d+\\.\\d"
                + " train_s=4\\.0");
    assertThat(script.ended.get()).isPositive();
    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .contains("job waiting for dataset")
        .contains("pass 1/2: tasks todo=3 pending=2 done=0 failed=0")
        .contains("pass 1/2 done: records=1000 loss=0.5000 accuracy=0.8000 samples/s=1000")
        .contains("pass 2/2 done: records=1000 loss=0.2500 accuracy=0.9375 samples/s=333");
  }

  @Test
  void follow_failedJob_throwsItsReason() {
    script = new Script("{'state':'FAILED','failureReason':'dataset matched no files'}");

    assertThatThrownBy(
            () -> follower(Duration.ofSeconds(1)).follow(System.nanoTime(), Duration.ofSeconds(30)))
        .isInstanceOf(LocalClusterException.class)
        .hasMessage("the job failed: dataset matched no files");
  }

  @Test
  void follow_finishedWithoutEvaluation_givesUpAfterTheEvalWait() {
    script =
        new Script(
            "{'state':'FINISHED','pass':1,'totalPasses':1,'passes':["
                + pass(0, 10, 1000, 2000, "")
                + "]}");

    assertThatThrownBy(
            () -> follower(Duration.ofMillis(30)).follow(System.nanoTime(), Duration.ofSeconds(30)))
        .hasMessageContaining("no evaluation of the last pass");
  }

  @Test
  void follow_processThatKeepsDying_throwsNamingIt() {
    script = new Script("none");
    script.processes.set(
        1, new ProcessInfo(Role.TRAINER, 1, 7, 1, 0, Path.of("t1.log"), ProcessState.FAILED, 5));

    assertThatThrownBy(
            () -> follower(Duration.ofSeconds(1)).follow(System.nanoTime(), Duration.ofSeconds(30)))
        .hasMessage("trainer-1 keeps dying (restarted 5 times); see t1.log");
  }

  @Test
  void follow_timeout_reportsWhatWasLastSeen() {
    script = new Script("none");

    assertThatThrownBy(
            () -> follower(Duration.ofSeconds(1)).follow(System.nanoTime(), Duration.ofMillis(30)))
        .hasMessageContaining("timed out")
        .hasMessageContaining("master-0: refused");
  }
}
