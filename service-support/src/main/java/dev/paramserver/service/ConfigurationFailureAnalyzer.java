package dev.paramserver.service;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.Ordered;
import org.springframework.core.convert.ConversionFailedException;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

/**
 * Explains a start that failed on a bad setting in one line per problem, naming the property in
 * kebab-case: for a closed set (an enum) the allowed values, for a bound ("must be at least 1") the
 * bound and the value given, for a {@link StartupCheck} its message. Runs before Spring Boot's own
 * analyzers, whose reports list enum constants in upper case and bury the reason in a stack trace.
 */
public final class ConfigurationFailureAnalyzer implements FailureAnalyzer, Ordered {
  /** Starts the report's description; the local orchestrator looks for it in a service's log. */
  public static final String PREFIX = "Invalid configuration: ";

  static final String ACTION =
      "Fix the property (application properties, --name=value on the command line, or the"
          + " environment variable in upper case with '_' for '.' and '-') and start again.";

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  public FailureAnalysis analyze(Throwable failure) {
    String reason = reason(failure);
    return reason == null ? null : new FailureAnalysis(PREFIX + reason, ACTION, failure);
  }

  /** The one-line reason of a configuration failure, or null if {@code failure} is not one. */
  public static String reason(Throwable failure) {
    InvalidPropertyException invalid = find(failure, InvalidPropertyException.class);
    if (invalid != null) {
      return invalid.getMessage();
    }
    BindException bind = deepestBindException(failure);
    if (bind == null) {
      return null;
    }
    String name = bind.getName().toString();
    ConfigurationProperty property = bind.getProperty();
    BindValidationException validation = find(bind, BindValidationException.class);
    if (validation != null) {
      List<String> lines = new ArrayList<>();
      String prefix = validation.getValidationErrors().getName().toString();
      for (ObjectError e : validation.getValidationErrors().getAllErrors()) {
        if (e instanceof FieldError f) {
          lines.add(
              propertyName(prefix, f.getField())
                  + " "
                  + f.getDefaultMessage()
                  + ", got "
                  + (f.getRejectedValue() == null ? "nothing" : "'" + f.getRejectedValue() + "'"));
        } else {
          lines.add(name + ": " + e.getDefaultMessage());
        }
      }
      return String.join("\n", lines);
    }
    ConversionFailedException conversion = find(bind, ConversionFailedException.class);
    Object value = property != null ? property.getValue() : null;
    if (conversion != null) {
      if (value == null) {
        value = conversion.getValue();
      }
      Class<?> target = conversion.getTargetType().getType();
      if (target.isEnum()) {
        return name
            + " '"
            + value
            + "' is not valid: choose one of "
            + allowed(target.getEnumConstants());
      }
      return name
          + " '"
          + value
          + "' is not valid: expected "
          + describe(target)
          + " ("
          + rootMessage(conversion)
          + ")";
    }
    String cause = rootMessage(bind);
    if (cause != null && cause.contains("paramserver.")) {
      return cause; // our own checks name the property already
    }
    return name + (value != null ? " '" + value + "'" : "") + " is not valid: " + cause;
  }

  /** The kebab-case property of a validated field ({@code batchSize} under {@code prefix}). */
  static String propertyName(String prefix, String field) {
    String kebab = field.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
    return prefix.isEmpty() || kebab.startsWith(prefix + ".") ? kebab : prefix + "." + kebab;
  }

  /** The allowed values of an enum property, as users write them: lower case, '-' for '_'. */
  public static String allowed(Object[] constants) {
    return Arrays.stream(constants)
        .map(c -> ((Enum<?>) c).name().toLowerCase(Locale.ROOT).replace('_', '-'))
        .collect(Collectors.joining(", "));
  }

  private static String describe(Class<?> type) {
    if (type == int.class || type == Integer.class || type == long.class || type == Long.class) {
      return "a whole number";
    }
    if (type == float.class || type == Float.class || type == double.class) {
      return "a number";
    }
    if (type == boolean.class || type == Boolean.class) {
      return "true or false";
    }
    if (type == java.time.Duration.class) {
      return "a duration such as 500ms, 10s or 5m";
    }
    if (type == org.springframework.util.unit.DataSize.class) {
      return "a size such as 512KB or 64MB";
    }
    return "a " + type.getSimpleName();
  }

  private static BindException deepestBindException(Throwable t) {
    BindException found = null;
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof BindException b) {
        found = b;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return found;
  }

  private static <T extends Throwable> T find(Throwable t, Class<T> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return type.cast(c);
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return null;
  }

  private static String rootMessage(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
  }
}
