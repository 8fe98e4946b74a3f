package dev.paramserver.it;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.springframework.boot.logging.LoggingSystem;

/**
 * For a test class that starts Spring services in its JVM: this module logs with slf4j-simple, so
 * the services leave logging alone (no Spring logging system) while the class runs.
 */
final class PlainLogging implements BeforeAllCallback, AfterAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    System.setProperty(LoggingSystem.SYSTEM_PROPERTY, LoggingSystem.NONE);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    System.clearProperty(LoggingSystem.SYSTEM_PROPERTY);
  }
}
