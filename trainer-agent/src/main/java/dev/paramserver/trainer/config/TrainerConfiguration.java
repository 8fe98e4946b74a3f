package dev.paramserver.trainer.config;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Composes the trainer's settings groups into one {@link TrainerProperties}. */
@Configuration(proxyBeanMethods = false)
class TrainerConfiguration {
  @Bean
  TrainerProperties trainerProperties(
      AgentProperties agent,
      DataProperties data,
      ModelProperties model,
      OptimizerProperties optimizer,
      CommunicationProperties communication) {
    return new TrainerProperties(agent, data, model, optimizer, communication);
  }
}
