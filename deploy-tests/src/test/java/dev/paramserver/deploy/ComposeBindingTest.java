package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.trainer.config.AgentProperties;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.config.OptimizerProperties;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Binds each compose service's environment (with the compose defaults of ${VAR:-default}) into the
 * services' real @ConfigurationProperties records with Spring Boot's Binder, the way the services
 * will: names and value types (durations, lists of globs, paths) must convert.
 */
class ComposeBindingTest {
  private static final Pattern INTERPOLATION = Pattern.compile("\\$\\{[A-Za-z0-9_]+:-([^}]*)}");

  @SuppressWarnings("unchecked")
  private static Binder binderFor(String service) {
    Map<String, Object> compose = RepoFiles.yaml("docker-compose.yml");
    Map<String, Map<String, Object>> services =
        (Map<String, Map<String, Object>>) compose.get("services");
    Map<String, Object> env = new LinkedHashMap<>();
    ((Map<String, Object>) services.get(service).get("environment"))
        .forEach((k, v) -> env.put(k, interpolate(String.valueOf(v))));
    StandardEnvironment environment = new StandardEnvironment();
    environment
        .getPropertySources()
        .replace(
            StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
            new SystemEnvironmentPropertySource(
                // named like the real one so Boot applies its environment-variable name mapping
                StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, env));
    return Binder.get(environment);
  }

  private static String interpolate(String value) {
    Matcher m = INTERPOLATION.matcher(value);
    return m.replaceAll(r -> Matcher.quoteReplacement(r.group(1)));
  }

  @Test
  void commonProperties_bindForEveryService() {
    for (String service : List.of("master-1", "pserver-2", "trainer-1", "serving-1")) {
      CommonProperties common =
          binderFor(service).bindOrCreate("paramserver", CommonProperties.class);
      assertThat(common.job()).isEqualTo("demo");
      assertThat(common.advertiseHost()).isEqualTo(service);
      assertThat(common.etcd().endpoints()).containsExactly("http://etcd:2379");
      assertThat(common.admin().token()).isNotBlank();
    }
  }

  @Test
  void masterProperties_bind() {
    MasterProperties master =
        binderFor("master-2").bindOrCreate("paramserver.master", MasterProperties.class);
    assertThat(master.passes()).isEqualTo(3);
  }

  @Test
  void pserverProperties_bind() {
    PserverProperties pserver =
        binderFor("pserver-1").bindOrCreate("paramserver.pserver", PserverProperties.class);
    assertThat(pserver.desired()).isEqualTo(2);
    assertThat(pserver.checkpointDir()).isEqualTo("/var/lib/paramserver/checkpoints");
    assertThat(pserver.checkpointInterval()).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void trainerProperties_bind() {
    Binder binder = binderFor("trainer-2");
    AgentProperties agent = binder.bindOrCreate("paramserver.trainer", AgentProperties.class);
    DataProperties data = binder.bindOrCreate("paramserver.trainer", DataProperties.class);
    OptimizerProperties optimizer =
        binder.bindOrCreate("paramserver.trainer", OptimizerProperties.class);
    ModelProperties model = binder.bindOrCreate("paramserver.trainer", ModelProperties.class);
    assertThat(agent.id()).isEqualTo("trainer-2");
    assertThat(data.trainData()).containsExactly("/data/train-*.recordio");
    assertThat(data.testData()).containsExactly("/data/test-*.recordio");
    assertThat(optimizer.learningRate()).isEqualTo(0.1f);
    assertThat(agent.exitWhenDone()).isTrue();
    assertThat(agent.exitLinger()).isEqualTo(Duration.ofSeconds(25));
    assertThat(model.modelOutput()).isEqualTo("/var/lib/paramserver/model/model.pb");
  }
}
