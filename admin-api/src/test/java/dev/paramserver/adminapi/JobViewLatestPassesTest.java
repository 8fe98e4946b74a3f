package dev.paramserver.adminapi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.testsupport.JsonSchemaCheck;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * {@link JobView#withLatestPasses} ({@code GET /admin/job?passes=N}): the latest N passes in order,
 * the count of the earlier ones, an answer the published schema accepts and both readers read; a
 * view without the limit writes no {@code passesOmitted}.
 */
class JobViewLatestPassesTest {
  private static final ObjectMapper JSON = AdminClient.json();

  /** The schema test's sample with {@code n} passes, numbered 0 to n-1. */
  private static JobView withPasses(int n) {
    JobView s = JobViewSchemaTest.sample();
    List<JobView.Pass> passes = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      passes.add(new JobView.Pass(i, 1000L * i, 1000L * i + 999, 10, 0, 0, 0.5, null, null, null));
    }
    return new JobView(
        s.time(),
        s.leader(),
        s.job(),
        passes,
        s.series(),
        s.pservers(),
        s.trainers(),
        s.events(),
        s.scaling());
  }

  @Test
  void latestTen_ofAThousandPasses_keepsTheLastTenInOrder_andCountsTheRest() {
    JobView v = withPasses(1000).withLatestPasses(10);

    assertThat(v.passes())
        .extracting(JobView.Pass::pass)
        .containsExactly(990, 991, 992, 993, 994, 995, 996, 997, 998, 999);
    assertThat(v.passesOmitted()).isEqualTo(990);
  }

  @Test
  void moreThanThereAre_keepsEvery_andOmitsNone_zeroKeepsNone() {
    assertThat(withPasses(3).withLatestPasses(10).passes()).hasSize(3);
    assertThat(withPasses(3).withLatestPasses(10).passesOmitted()).isZero();
    assertThat(withPasses(3).withLatestPasses(0).passes()).isEmpty();
    assertThat(withPasses(3).withLatestPasses(0).passesOmitted()).isEqualTo(3);
    // limiting a limited view counts every pass left out
    assertThat(withPasses(5).withLatestPasses(3).withLatestPasses(1).passesOmitted()).isEqualTo(4);
  }

  @Test
  void beforeTheFirstSample_theViewIsUnchanged_aNegativeCountIsRefused() {
    JobView unsampled = JobView.unsampled(List.of());
    assertThat(unsampled.withLatestPasses(10)).isSameAs(unsampled);
    assertThatThrownBy(() -> withPasses(1).withLatestPasses(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("got -1");
  }

  @Test
  void theLimitedAnswer_followsTheSchema_andReadsBackAlike_theFullOneHasNoCount() throws Exception {
    JsonSchemaCheck schema = JsonSchemaCheck.of(JobViewSchema.published());
    JobView limited = withPasses(12).withLatestPasses(10);
    JsonNode json = JSON.valueToTree(limited);
    assertThat(schema.errors(json)).as(json.toString()).isEmpty();
    assertThat(json.path("passesOmitted").asInt()).isEqualTo(2);
    String text = JSON.writeValueAsString(limited);
    assertThat(JsonRecords.read(text, JobView.class))
        .isEqualTo(limited)
        .isEqualTo(JSON.readValue(text, JobView.class));

    JsonNode full = JSON.valueToTree(withPasses(12));
    assertThat(full.has("passesOmitted")).isFalse();
    assertThat(full.path("passes").size()).isEqualTo(12);
  }
}
