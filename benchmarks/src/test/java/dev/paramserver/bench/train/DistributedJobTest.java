package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.localcluster.JobStatusView;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.ObjectMapper;

class DistributedJobTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JobStatusView finished(String lastPass) throws Exception {
    return new JobStatusView(
        JSON.readTree(
            """
            {"state": "FINISHED", "pass": 3, "totalPasses": 3, "passes": [
              {"pass": 0, "records": "1000", "evalReports": 1, "evalAccuracy": 0.61, "evalAuc": 0.6861},
              {"pass": 1, "records": "1000", "evalReports": 1, "evalAccuracy": 0.64, "evalAuc": 0.6951},
            """
                + lastPass
                + "]}"));
  }

  @Test
  void quality_isTheLastPassEvaluation() throws Exception {
    JobStatusView end =
        finished(
            "{\"pass\": 2, \"records\": \"1000\", \"evalReports\": 1, \"evalAccuracy\": 0.642,"
                + " \"evalAuc\": 0.7012}");
    assertThat(DistributedJob.lastPassQuality("auc", end)).isEqualTo(0.7012);
    assertThat(DistributedJob.lastPassQuality("accuracy", end)).isEqualTo(0.642);
  }

  @Test
  void quality_ofAJobWhoseLastPassIsNotEvaluatedYet_isNaN_notThePassBefore() throws Exception {
    // read when the master finished the job, before the trainer reported the last evaluation: the
    // click-through figure was the second pass's 0.6951 in such runs
    JobStatusView end = finished("{\"pass\": 2, \"records\": \"1000\", \"evalReports\": 0}");
    assertThat(DistributedJob.lastPassQuality("auc", end)).isNaN();
  }

  @Test
  void aTwoSidedTarget_holdsWithinTheBoundEitherWay() {
    Target t = Target.within(0.005);
    assertThat(t.met(0.0058)).isFalse();
    assertThat(t.met(-0.0058)).isFalse();
    assertThat(t.met(-0.004)).isTrue();
    assertThat(t.met(0.005)).isTrue();
    assertThat(t.toString()).isEqualTo("within ±0.005");
  }
}
