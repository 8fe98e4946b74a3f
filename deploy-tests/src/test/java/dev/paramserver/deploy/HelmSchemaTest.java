package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.models.Mlp;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.trainer.config.ModelType;
import dev.paramserver.trainer.config.OptimizerKind;
import dev.paramserver.trainer.config.TrainingModeSetting;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.Pattern;
import java.lang.annotation.Annotation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.hibernate.validator.constraints.time.DurationMax;
import org.hibernate.validator.constraints.time.DurationMin;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * values.schema.json holds the enums and bounds of the services' property records, derived here
 * from the records themselves so the two cannot drift; the real helm refuses values outside them at
 * render time, before any pod starts.
 */
@SuppressWarnings("unchecked")
class HelmSchemaTest {
  private static final Map<String, Object> SCHEMA = schema();

  private static Map<String, Object> schema() {
    // JSON is YAML
    return new Yaml().load(RepoFiles.read("helm/paramserver/values.schema.json"));
  }

  private static Map<String, Object> property(String dotted) {
    Object cur = SCHEMA;
    for (String key : dotted.split("\\.")) {
      cur = ((Map<String, Object>) ((Map<String, Object>) cur).get("properties")).get(key);
    }
    assertThat(cur).as("schema of " + dotted).isNotNull();
    return (Map<String, Object>) cur;
  }

  /**
   * Spring binds enum constants from their kebab-case names: BOUNDED_STALENESS is
   * bounded-staleness.
   */
  private static List<String> kebab(Enum<?>[] constants) {
    return Arrays.stream(constants)
        .map(c -> c.name().toLowerCase(Locale.ROOT).replace('_', '-'))
        .toList();
  }

  private static List<String> withEmpty(List<String> names) {
    return Stream.concat(Stream.of(""), names.stream()).toList();
  }

  /**
   * A constraint of a record component: constraint annotations (no RECORD_COMPONENT target) land on
   * the component's field.
   */
  private static <A extends Annotation> A constraint(
      Class<?> record, String component, Class<A> type) {
    try {
      A a = record.getDeclaredField(component).getAnnotation(type);
      assertThat(a)
          .as(record.getSimpleName() + "." + component + " @" + type.getSimpleName())
          .isNotNull();
      return a;
    } catch (NoSuchFieldException e) {
      throw new AssertionError(record.getSimpleName() + " has no " + component, e);
    }
  }

  @Test
  void trainerEnums_areTheServicesEnums() {
    assertThat((List<Object>) property("trainer.optimizer").get("enum"))
        .containsExactlyElementsOf(kebab(OptimizerKind.values()));
    assertThat((List<Object>) property("trainer.model").get("enum"))
        .containsExactlyElementsOf(kebab(ModelType.values()));
    assertThat((List<Object>) property("trainer.mode").get("enum"))
        .containsExactlyElementsOf(withEmpty(kebab(TrainingModeSetting.values())));
    assertThat((List<Object>) property("trainer.activation").get("enum"))
        .containsExactlyElementsOf(withEmpty(kebab(Mlp.Activation.values())));
    // the names users write are the ones the services print
    assertThat(kebab(OptimizerKind.values()))
        .containsExactlyElementsOf(
            Arrays.stream(OptimizerKind.values()).map(OptimizerKind::id).toList());
    assertThat(kebab(ModelType.values()))
        .containsExactlyElementsOf(Arrays.stream(ModelType.values()).map(ModelType::id).toList());
  }

  @Test
  void masterMinimums_areTheRecordsMinimums() {
    for (String[] pair :
        new String[][] {
          {"passes", "passes"}, {"chunksPerTask", "chunksPerTask"}, {"maxFailures", "maxFailures"}
        }) {
      Min min = constraint(MasterProperties.class, pair[1], Min.class);
      assertThat(((Number) property("master." + pair[0]).get("minimum")).longValue())
          .as("master." + pair[0])
          .isEqualTo(min.value());
    }
  }

  @Test
  void jobNamePattern_isTheRecordsPattern() {
    Pattern p = constraint(CommonProperties.class, "job", Pattern.class);
    assertThat(property("jobName").get("pattern")).isEqualTo("^" + p.regexp() + "$");
    assertThat(HelmChart.failure("jobName=-starts-with-a-dash")).contains("jobName");
  }

  @Test
  void typos_areRefusedAtRenderTime() {
    assertThat(HelmChart.failure("trainer.optimizer=adamm")).contains("optimizer");
    assertThat(HelmChart.failure("trainer.model=softmx")).contains("model");
    assertThat(HelmChart.failure("trainer.mode=bounded")).contains("mode");
    assertThat(HelmChart.failure("master.passes=0")).contains("passes");
    assertThat(HelmChart.template("trainer.mode=bounded-staleness", "trainer.activation=tanh"))
        .isNotNull();
  }

  @Test
  void etcdDurations_renderWithinTheRecordsBounds_andFailOutsideThem() {
    List<String> problems = new ArrayList<>();
    for (String[] pair :
        new String[][] {
          {"callTimeout", "callTimeout"},
          {"leaseTtl", "leaseTtl"},
          {"startupTimeout", "startupTimeout"}
        }) {
      long min = millis(constraint(CommonProperties.Etcd.class, pair[1], DurationMin.class));
      long max = millis(constraint(CommonProperties.Etcd.class, pair[1], DurationMax.class));
      String value = "etcd." + pair[0] + "=";
      HelmChart.template(value + min + "ms");
      HelmChart.template(value + max + "ms");
      if (min > 0) {
        String err = HelmChart.failure(value + (min - 1) + "ms");
        if (!err.contains("etcd." + pair[0])) {
          problems.add("below the minimum: " + err);
        }
      }
      String err = HelmChart.failure(value + (max + 1) + "ms");
      if (!err.contains("etcd." + pair[0])) {
        problems.add("above the maximum: " + err);
      }
    }
    assertThat(problems).isEmpty();
  }

  private static long millis(DurationMin d) {
    return millis(d.days(), d.hours(), d.minutes(), d.seconds(), d.millis());
  }

  private static long millis(DurationMax d) {
    return millis(d.days(), d.hours(), d.minutes(), d.seconds(), d.millis());
  }

  private static long millis(long days, long hours, long minutes, long seconds, long millis) {
    return Duration.ofDays(days)
        .plusHours(hours)
        .plusMinutes(minutes)
        .plusSeconds(seconds)
        .plusMillis(millis)
        .toMillis();
  }
}
