package dev.paramserver.master;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** The master service: dataset, task queues and passes, elected through etcd. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class MasterApplication {
  public static void main(String[] args) {
    SpringApplication.run(MasterApplication.class, args);
  }
}
