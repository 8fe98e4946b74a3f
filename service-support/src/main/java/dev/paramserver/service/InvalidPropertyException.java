package dev.paramserver.service;

/**
 * A configuration property holds a value the service cannot work with, found by a {@link
 * StartupCheck} before the service touches etcd. The message names the property in kebab-case and
 * says what to do; {@link ConfigurationFailureAnalyzer} prints it as the reason the service did not
 * start.
 */
public class InvalidPropertyException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String property;

  /**
   * @param property the property's full name, for example {@code paramserver.trainer.train-data}
   * @param message what is wrong and what to do, naming the property
   */
  public InvalidPropertyException(String property, String message) {
    super(message);
    this.property = property;
  }

  public String property() {
    return property;
  }
}
