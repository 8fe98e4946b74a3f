package dev.paramserver.trainer.config;

import dev.paramserver.storage.Storage;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The trainer's access to files and {@code s3://} objects. */
@Configuration(proxyBeanMethods = false)
class TrainerStorageConfiguration {
  @Bean(destroyMethod = "close")
  Storage trainerStorage(TrainerStorageProperties props) {
    return Storage.create(props.s3(), "paramserver.trainer.s3");
  }
}
