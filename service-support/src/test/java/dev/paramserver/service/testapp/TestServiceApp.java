package dev.paramserver.service.testapp;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.service.AdminStatusSource;
import dev.paramserver.service.LifecyclePhases;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;

/** A minimal service built on service-support, as master, pserver and trainer are. */
@SpringBootApplication
public class TestServiceApp {

  @Bean
  AdminStatusSource adminStatusSource() {
    return new AdminStatusSource() {
      @Override
      public String role() {
        return "tester";
      }

      @Override
      public String state() {
        return "RUNNING";
      }

      @Override
      public String identity() {
        return "127.0.0.1:1234";
      }

      @Override
      public Map<String, Object> details() {
        return Map.of("answer", 42, "role", "ignored");
      }
    };
  }

  /** Writes to etcd when it stops: proves the coordinator is still open in phase ROLE. */
  @Bean
  SmartLifecycle roleComponent(Coordinator coordinator) {
    return new SmartLifecycle() {
      private volatile boolean running;

      @Override
      public void start() {
        running = true;
      }

      @Override
      public void stop() {
        coordinator
            .kv()
            .put(
                coordinator.keys().prefix() + "stopped",
                "drained".getBytes(StandardCharsets.UTF_8));
        running = false;
      }

      @Override
      public boolean isRunning() {
        return running;
      }

      @Override
      public int getPhase() {
        return LifecyclePhases.ROLE;
      }
    };
  }
}
