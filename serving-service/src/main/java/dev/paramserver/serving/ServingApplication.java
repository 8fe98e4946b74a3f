package dev.paramserver.serving;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/**
 * A serving replica: follows every shard of a training job and answers lookups, pulls and
 * predictions on consistent versions of the model.
 */
@SpringBootApplication
@ConfigurationPropertiesScan
public class ServingApplication {
  public static void main(String[] args) {
    SpringApplication.run(ServingApplication.class, args);
  }
}
