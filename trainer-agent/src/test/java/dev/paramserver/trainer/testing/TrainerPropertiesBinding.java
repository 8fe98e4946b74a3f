package dev.paramserver.trainer.testing;

import dev.paramserver.trainer.config.AgentProperties;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.config.OptimizerProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import java.util.Map;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** Binds trainer settings from property keys and values, as Spring Boot does (no validation). */
public final class TrainerPropertiesBinding {
  private TrainerPropertiesBinding() {}

  public static TrainerProperties bind(Map<String, String> properties) {
    Binder binder = new Binder(new MapConfigurationPropertySource(properties));
    String prefix = "paramserver.trainer";
    return new TrainerProperties(
        binder.bindOrCreate(prefix, AgentProperties.class),
        binder.bindOrCreate(prefix, DataProperties.class),
        binder.bindOrCreate(prefix, ModelProperties.class),
        binder.bindOrCreate(prefix, OptimizerProperties.class),
        binder.bindOrCreate(prefix, CommunicationProperties.class));
  }
}
