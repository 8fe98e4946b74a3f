package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.JobStatusView;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.ObjectMapper;

class FirstTaskWatchTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JobStatusView status(String json) throws Exception {
    return new JobStatusView(JSON.readTree(json));
  }

  @Test
  void handedOut_notBeforeTheDatasetOrWhileEveryTaskIsTodo() throws Exception {
    assertThat(FirstTaskWatch.handedOut(status("{\"state\":\"WAITING_FOR_DATASET\"}"))).isFalse();
    assertThat(
            FirstTaskWatch.handedOut(
                status(
                    "{\"state\":\"RUNNING\",\"pass\":0,\"tasks\":{\"todo\":\"5\",\"pending\":\"0\","
                        + "\"done\":\"0\",\"failed\":\"0\"}}")))
        .isFalse();
  }

  @Test
  void handedOut_onceATaskIsPendingDoneOrFailed() throws Exception {
    assertThat(
            FirstTaskWatch.handedOut(
                status("{\"state\":\"RUNNING\",\"tasks\":{\"todo\":\"4\",\"pending\":\"1\"}}")))
        .isTrue();
    assertThat(
            FirstTaskWatch.handedOut(
                status("{\"state\":\"RUNNING\",\"tasks\":{\"todo\":\"4\",\"done\":\"1\"}}")))
        .isTrue();
    assertThat(
            FirstTaskWatch.handedOut(
                status("{\"state\":\"RUNNING\",\"tasks\":{\"todo\":\"4\",\"failed\":\"1\"}}")))
        .isTrue();
  }

  @Test
  void handedOut_whenAPassOrTheJobIsAlreadyOver() throws Exception {
    assertThat(
            FirstTaskWatch.handedOut(
                status("{\"state\":\"RUNNING\",\"pass\":1,\"tasks\":{\"todo\":\"5\"}}")))
        .isTrue();
    assertThat(FirstTaskWatch.handedOut(status("{\"state\":\"FINISHED\",\"pass\":5}"))).isTrue();
    assertThat(FirstTaskWatch.handedOut(status("{\"state\":\"FAILED\"}"))).isTrue();
  }
}
