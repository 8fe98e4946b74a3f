package dev.paramserver.trainer;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** The trainer agent: trains a model on the tasks the master hands out. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class TrainerApplication {
  public static void main(String[] args) {
    SpringApplication.run(TrainerApplication.class, args);
  }
}
