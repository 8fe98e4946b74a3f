package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reading why a trainer's last incarnation failed from its log. */
class ExitReasonTest {
  @TempDir Path dir;

  private static final String FAILED_LINE =
      "2026-12-01T22:00:00.000Z ERROR 7 --- [trainer-loop] d.p.t.training.TrainingSession   :"
          + " training failed: INVALID_ARGUMENT: dataset file /d/a.pb is not a RecordIO file\n"
          + "io.grpc.StatusRuntimeException: INVALID_ARGUMENT: dataset file /d/a.pb ...\n"
          + "\tat io.grpc.stub.ClientCalls.toStatusRuntimeException(ClientCalls.java:268)\n";

  private Path log(String text) throws IOException {
    return Files.writeString(dir.resolve("trainer-0.log"), text);
  }

  @Test
  void in_returnsTheRestOfTheLastFailureLine_ofTheLastIncarnation() throws IOException {
    Path log =
        log(
            "\n===== t starting trainer-0 (http 1, grpc 0): java\n"
                + "training failed: an older error\n"
                + "\n===== t restarting trainer-0 (restart 1) (http 1, grpc 0): java\n"
                + "INFO started\n"
                + FAILED_LINE);

    assertThat(ExitReason.in(log))
        .isEqualTo("INVALID_ARGUMENT: dataset file /d/a.pb is not a RecordIO file");
  }

  @Test
  void in_isNull_whenTheLastIncarnationLoggedNoFailure() throws IOException {
    Path log =
        log(
            "\n===== t starting trainer-0 (http 1, grpc 0): java\n"
                + FAILED_LINE
                + "\n===== t restarting trainer-0 (restart 1) (http 1, grpc 0): java\n"
                + "INFO killed\n");

    assertThat(ExitReason.in(log)).isNull();
    assertThat(ExitReason.in(dir.resolve("missing.log"))).isNull();
  }
}
