package dev.paramserver.pserver;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** The parameter server: holds a shard of the model and applies trainers' gradients to it. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class PserverApplication {
  public static void main(String[] args) {
    SpringApplication.run(PserverApplication.class, args);
  }
}
