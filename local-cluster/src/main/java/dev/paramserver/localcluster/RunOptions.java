package dev.paramserver.localcluster;

import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The options of {@link RunLocal}, parsed from {@code --name value} or {@code --name=value}
 * arguments. Defaults: softmax, sgd, lr 0.1, batch 64, 3 passes, 2 pservers, 2 trainers, 1 master,
 * run folder ./runs/&lt;timestamp&gt;, job "local", timeout 15 min.
 */
final class RunOptions {
  static final String USAGE =
      """
      usage: run-local [options]
        --train GLOB           training RecordIO files (required unless --demo-data)
        --test GLOB            test files evaluated after each pass (default: the training files)
        --demo-data DIR        use DIR/train-*.recordio and DIR/test-*.recordio
        --model NAME           softmax (default), mlp, sparse-lr
        --hidden SIZES         hidden layer sizes for mlp, e.g. 128,64
        --optimizer NAME       sgd (default), momentum, adam, ...
        --lr X                 learning rate (default 0.1)
        --batch-size B         mini-batch size (default 64)
        --passes N             passes over the data (default 3)
        --sync                 synchronous training (default asynchronous)
        --format F             input format: recordio (default) or libsvm
        --masters K            masters, 1 leader + standbys (default 1)
        --pservers N           parameter servers (default 2)
        --trainers M           trainer agents (default 2)
        --run-dir DIR          run folder for logs, checkpoints, cluster.json (default ./runs/<time>)
        --job NAME             job name, the etcd key prefix (default local)
        --timeout DURATION     give up after this long, e.g. 900s, 15m (default 15m)
        --jar-dir DIR          where the service exec jars are (default: <repo>/<module>/target)
        --set ROLE.KEY=VALUE   extra property for master|pserver|trainer, e.g.
                               --set pserver.paramserver.pserver.checkpoint-interval=10s (repeatable)
        --help                 show this help
      """;

  private static final Set<String> FLAGS = Set.of("sync", "help");
  private static final Pattern SHORT_DURATION =
      Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|min|h)?", Pattern.CASE_INSENSITIVE);

  String train;
  String test;
  Path demoData;
  String model = "softmax";
  String hidden;
  String optimizer = "sgd";
  String lr = "0.1";
  int batchSize = 64;
  int passes = 3;
  boolean sync;
  String format;
  int masters = 1;
  int pservers = 2;
  int trainers = 2;
  Path runDir;
  String job = "local";
  Duration timeout = Duration.ofMinutes(15);
  Path jarDir;
  final List<Extra> extras = new ArrayList<>();
  boolean help;

  /** One {@code --set role.key=value}. */
  record Extra(Role role, String key, String value) {}

  /** Thrown for a bad command line; the message says what is wrong. */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  static RunOptions parse(String... args) {
    RunOptions o = new RunOptions();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (!arg.startsWith("--") || arg.length() == 2) {
        throw new UsageException("unexpected argument '" + arg + "' (options start with --)");
      }
      String name = arg.substring(2);
      String value = null;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      } else if (!FLAGS.contains(name)) {
        if (i + 1 >= args.length) {
          throw new UsageException("option --" + name + " needs a value");
        }
        value = args[++i];
      }
      o.apply(name, value);
    }
    o.validate();
    if (o.runDir == null) {
      o.runDir =
          Path.of(
              "runs", LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }
    return o;
  }

  private void apply(String name, String value) {
    switch (name) {
      case "train" -> train = nonBlank(name, value);
      case "test" -> test = nonBlank(name, value);
      case "demo-data" -> demoData = Path.of(nonBlank(name, value));
      case "model" -> model = nonBlank(name, value);
      case "hidden" -> hidden = hiddenSizes(value);
      case "optimizer" -> optimizer = nonBlank(name, value);
      case "lr" -> lr = learningRate(value);
      case "batch-size" -> batchSize = positive(name, value);
      case "passes" -> passes = positive(name, value);
      case "sync" -> sync = value == null || bool(name, value);
      case "format" -> format = nonBlank(name, value).toLowerCase(Locale.ROOT);
      case "masters" -> masters = positive(name, value);
      case "pservers" -> pservers = positive(name, value);
      case "trainers" -> trainers = positive(name, value);
      case "run-dir" -> runDir = Path.of(nonBlank(name, value));
      case "job" -> job = nonBlank(name, value);
      case "timeout" -> timeout = duration(value);
      case "jar-dir" -> jarDir = Path.of(nonBlank(name, value));
      case "set" -> extras.add(extra(value));
      case "help" -> help = value == null || bool(name, value);
      default -> throw new UsageException("unknown option --" + name + " (see --help)");
    }
  }

  private void validate() {
    if (help) {
      return;
    }
    if (train == null && demoData == null) {
      throw new UsageException(
          "no training data: pass --train GLOB (and --test GLOB) or --demo-data DIR;"
              + " scripts/run-local.sh generates demo data when neither is given");
    }
    if (train != null && demoData != null) {
      throw new UsageException("pass either --train or --demo-data, not both");
    }
    if (format != null && !format.equals("recordio") && !format.equals("libsvm")) {
      throw new UsageException("--format must be recordio or libsvm, got '" + format + "'");
    }
    if (!job.matches("[A-Za-z0-9._-]+")) {
      throw new UsageException("--job '" + job + "' may use only letters, digits, '.', '_', '-'");
    }
  }

  /** The training glob, from --train or --demo-data. */
  String trainGlob() {
    return train != null ? train : demoData.resolve("train-*.recordio").toString();
  }

  /** The test glob: --test, else the demo data's test files, else the training files. */
  String testGlob() {
    if (test != null) {
      return test;
    }
    return demoData != null ? demoData.resolve("test-*.recordio").toString() : trainGlob();
  }

  static Duration duration(String text) {
    String t = text == null ? "" : text.trim();
    if (t.toUpperCase(Locale.ROOT).startsWith("P")) {
      try {
        return positive("timeout", Duration.parse(t));
      } catch (DateTimeParseException e) {
        throw new UsageException("bad duration '" + text + "': " + e.getMessage());
      }
    }
    Matcher m = SHORT_DURATION.matcher(t);
    if (!m.matches()) {
      throw new UsageException(
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
    return positive("timeout", Duration.ofMillis(Math.round(millis)));
  }

  private static Duration positive(String name, Duration d) {
    if (d.isNegative() || d.isZero()) {
      throw new UsageException("--" + name + " must be positive, got " + d);
    }
    return d;
  }

  private static Extra extra(String value) {
    int eq = value == null ? -1 : value.indexOf('=');
    int dot = value == null ? -1 : value.indexOf('.');
    if (eq < 0 || dot < 0 || dot > eq || dot == 0 || dot + 1 == eq) {
      throw new UsageException(
          "--set expects ROLE.KEY=VALUE (ROLE master, pserver or trainer), got '" + value + "'");
    }
    Role role;
    try {
      role = Role.parse(value.substring(0, dot));
    } catch (IllegalArgumentException e) {
      throw new UsageException("--set " + value + ": " + e.getMessage());
    }
    return new Extra(role, value.substring(dot + 1, eq), value.substring(eq + 1));
  }

  private static String nonBlank(String name, String value) {
    if (value == null || value.isBlank()) {
      throw new UsageException("option --" + name + " needs a non-empty value");
    }
    return value;
  }

  private static int positive(String name, String value) {
    try {
      int n = Integer.parseInt(value.trim());
      if (n < 1) {
        throw new UsageException("--" + name + " must be at least 1, got " + n);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new UsageException("--" + name + " expects a whole number, got '" + value + "'");
    }
  }

  private static boolean bool(String name, String value) {
    return switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "true", "yes", "1" -> true;
      case "false", "no", "0" -> false;
      default -> throw new UsageException("--" + name + " expects true or false, got " + value);
    };
  }

  private static String learningRate(String value) {
    try {
      double lr = Double.parseDouble(value.trim());
      if (!(lr > 0) || Double.isInfinite(lr)) {
        throw new UsageException("--lr must be a positive number, got " + value);
      }
      return value.trim();
    } catch (NumberFormatException e) {
      throw new UsageException("--lr expects a number, got '" + value + "'");
    }
  }

  private static String hiddenSizes(String value) {
    String v = value == null ? "" : value.replace(" ", "");
    if (!v.matches("\\d+(,\\d+)*") || v.matches(".*\\b0+\\b.*")) {
      throw new UsageException(
          "--hidden expects positive layer sizes separated by commas, e.g. 128,64, got '"
              + value
              + "'");
    }
    return v;
  }
}
