package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python client's GetTask carries a {@code request_id} (master.proto field 6), the same on
 * every retry of one request, so a retry gets back the tasks of an answer that was lost: against a
 * real master, {@code clients/python/tests/e2e/lost_answer.py} loses the answer to its first
 * GetTask (the master handed out a task and saved the answer; the client saw UNAVAILABLE), and the
 * client's retry must be handed that task again, with the task pending once. Without the id the
 * master hands out another task and two are pending. Debian's Python (the client's code is the same
 * under both stacks; the venv's start costs more than this test).
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class PythonGetTaskRetryTest {
  @TempDir Path dir;

  @Test
  void aGetTaskRetriedAfterItsAnswerWasLost_getsTheSameTaskBack_pendingOnce() throws Exception {
    PythonProcesses.assumeUsable(dir, false);
    Path data = dir.resolve("data");
    DemoData.generate(data, DemoData.Options.builder().train(4000).test(100).shards(2).build());
    Path log = dir.resolve("lost-answer.log");
    Process p = null;
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("py-retry")
                .masters(1)
                .pservers(1)
                .trainers(0)
                .trainersThroughMaster(true)
                .property(Role.MASTER, "paramserver.master.task-records", "500")
                .build())) {
      cluster.start();
      p =
          PythonProcesses.start(
              log,
              PythonProcesses.E2E.resolve("lost_answer.py").toString(),
              "--master",
              "127.0.0.1:" + cluster.process(Role.MASTER, 0).grpcPort(),
              "--data",
              data.resolve("train-*.recordio").toString());
      assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("lost_answer.py ends").isTrue();
      String out = PythonProcesses.read(log);
      assertThat(out).as("its output").containsPattern("RETRY lost=(\\d+) got=\\1 pending=1 ");
      assertThat(p.exitValue()).as("its exit code; output:\n%s", out).isZero();
    } finally {
      PythonProcesses.kill(p);
    }
  }
}
