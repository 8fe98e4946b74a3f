package dev.paramserver.localcluster;

import dev.paramserver.localcluster.RunOptions.Extra;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The checks of {@link RunOptions}' values, one picocli converter per kind of value: each names the
 * rule a bad value breaks ("must be in [0, 1), got 1.5"), and picocli adds the option's name.
 */
final class RunOptionConverters {
  private static final Pattern SHORT_DURATION =
      Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|min|h)?", Pattern.CASE_INSENSITIVE);

  private RunOptionConverters() {}

  /** A positive duration: seconds by default, or with ms, s, m, min, h; or ISO-8601 (PT15M). */
  static Duration duration(String text) {
    String t = text == null ? "" : text.trim();
    if (t.toUpperCase(Locale.ROOT).startsWith("P")) {
      try {
        return positive(Duration.parse(t));
      } catch (DateTimeParseException e) {
        throw new TypeConversionException("bad duration '" + text + "': " + e.getMessage());
      }
    }
    Matcher m = SHORT_DURATION.matcher(t);
    if (!m.matches()) {
      throw new TypeConversionException(
          "bad duration '" + text + "': use e.g. 900 (seconds), 900s, 15m, 1h, 500ms or PT15M");
    }
    double amount = Double.parseDouble(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2).toLowerCase(Locale.ROOT);
    double millis =
        switch (unit) {
          case "ms" -> amount;
          case "m", "min" -> amount * 60_000;
          case "h" -> amount * 3_600_000;
          default -> amount * 1000;
        };
    return positive(Duration.ofMillis(Math.round(millis)));
  }

  private static Duration positive(Duration d) {
    if (d.isNegative() || d.isZero()) {
      throw new TypeConversionException("must be positive, got " + d);
    }
    return d;
  }

  static final class TimeoutConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return duration(value);
    }
  }

  static final class NonBlank implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      if (value.isBlank()) {
        throw new TypeConversionException("needs a non-empty value");
      }
      return value;
    }
  }

  /** The models of the trainer ({@code paramserver.trainer.model}). */
  public static final List<String> MODELS = List.of("softmax", "mlp", "sparse-lr");

  /** The optimizers of the trainer ({@code paramserver.trainer.optimizer}). */
  public static final List<String> OPTIMIZERS =
      List.of("sgd", "momentum", "nesterov", "adam", "adamw", "adagrad", "rmsprop", "adadelta");

  /** The learning-rate schedules ({@code paramserver.trainer.lr-schedule}). */
  public static final List<String> SCHEDULES =
      List.of("constant", "step", "exponential", "warmup-cosine", "warmup-linear");

  /** The training modes ({@code paramserver.trainer.mode}). */
  public static final List<String> MODES = List.of("async", "sync", "bounded-staleness");

  /** One of {@code allowed}, compared without case and with '_' as '-'. */
  static String oneOf(String value, List<String> allowed) {
    String v = value.trim().toLowerCase(Locale.ROOT).replace('_', '-');
    if (!allowed.contains(v)) {
      throw new TypeConversionException(
          "'" + value + "' is not one of " + String.join(", ", allowed));
    }
    return v;
  }

  static final class ModelName implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      return oneOf(value, MODELS);
    }
  }

  static final class OptimizerName implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      return oneOf(value, OPTIMIZERS);
    }
  }

  static final class ScheduleName implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      return oneOf(value, SCHEDULES);
    }
  }

  static final class ModeName implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      return oneOf(value, MODES);
    }
  }

  private static double number(String value) {
    double x;
    try {
      x = Double.parseDouble(value.trim());
    } catch (NumberFormatException e) {
      throw new TypeConversionException("expects a number, got '" + value + "'");
    }
    if (!Double.isFinite(x)) {
      throw new TypeConversionException("expects a finite number, got '" + value + "'");
    }
    return x;
  }

  static final class NonNegative implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      if (number(value) < 0) {
        throw new TypeConversionException("must be 0 or more, got " + value);
      }
      return value.trim();
    }
  }

  static final class UnitInterval implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      double x = number(value);
      if (x < 0 || x >= 1) {
        throw new TypeConversionException("must be in [0, 1), got " + value);
      }
      return value.trim();
    }
  }

  static final class WholeNumber implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      long n;
      try {
        n = Long.parseLong(value.trim());
      } catch (NumberFormatException e) {
        throw new TypeConversionException("expects a whole number, got '" + value + "'");
      }
      if (n < 0) {
        throw new TypeConversionException("must be 0 or more, got " + n);
      }
      return Long.toString(n);
    }
  }

  /** A whole number of at least {@code min}, or the error that names the rule broken. */
  private static int wholeNumber(String value, int min, String rule) {
    int n;
    try {
      n = Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new TypeConversionException("expects a whole number, got '" + value + "'");
    }
    if (n < min) {
      throw new TypeConversionException("must be " + rule + ", got " + n);
    }
    return n;
  }

  static final class AtLeastOne implements ITypeConverter<Integer> {
    @Override
    public Integer convert(String value) {
      return wholeNumber(value, 1, "at least 1");
    }
  }

  static final class ZeroOrMore implements ITypeConverter<Integer> {
    @Override
    public Integer convert(String value) {
      return wholeNumber(value, 0, "0 or more");
    }
  }

  static final class NiceValue implements ITypeConverter<Integer> {
    @Override
    public Integer convert(String value) {
      int n = wholeNumber(value, 0, "0 to 19");
      if (n > 19) {
        throw new TypeConversionException("must be 0 to 19, got " + n);
      }
      return n;
    }
  }

  static final class LearningRate implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      double lr;
      try {
        lr = Double.parseDouble(value.trim());
      } catch (NumberFormatException e) {
        throw new TypeConversionException("expects a number, got '" + value + "'");
      }
      if (!(lr > 0) || Double.isInfinite(lr)) {
        throw new TypeConversionException("must be a positive number, got " + value);
      }
      return value.trim();
    }
  }

  static final class HiddenSizes implements ITypeConverter<String> {
    @Override
    public String convert(String value) {
      String v = value.replace(" ", "");
      if (!v.matches("\\d+(,\\d+)*") || v.matches(".*\\b0+\\b.*")) {
        throw new TypeConversionException(
            "expects positive layer sizes separated by commas, e.g. 128,64, got '" + value + "'");
      }
      return v;
    }
  }

  static final class ExtraConverter implements ITypeConverter<Extra> {
    @Override
    public Extra convert(String value) {
      int eq = value.indexOf('=');
      int dot = value.indexOf('.');
      if (eq < 0 || dot < 0 || dot > eq || dot == 0 || dot + 1 == eq) {
        throw new TypeConversionException(
            "expects ROLE.KEY=VALUE (ROLE master, pserver, trainer or serving), got '"
                + value
                + "'");
      }
      Role role;
      try {
        role = Role.parse(value.substring(0, dot));
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
      return new Extra(role, value.substring(dot + 1, eq), value.substring(eq + 1));
    }
  }
}
