package dev.paramserver.bench.report;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Everything one run of the suite measured: tables per section (also kept as JSON records), the
 * ratios against the same-run baselines with their targets, and free-form notes (profiles).
 * Rendered as Markdown and JSON.
 */
public final class Report {
  private final Map<String, Object> machine = new LinkedHashMap<>();
  private final List<Table> tables = new ArrayList<>();
  private final List<Ratio> ratios = new ArrayList<>();
  private final Map<String, List<String>> notes = new LinkedHashMap<>();
  private final Map<String, Object> extra = new LinkedHashMap<>();

  /** One ratio; {@code target} is null for informational ratios. */
  public record Ratio(String name, double value, Target target, String baseline) {
    public Boolean met() {
      return target == null || Double.isNaN(value) ? null : target.met(value);
    }
  }

  /**
   * A bound on a ratio: at least {@code bound} (higher is better), at most, or, {@code twoSided},
   * within {@code bound} of 0 either way (a difference that should be near 0).
   */
  public record Target(boolean atLeast, double bound, boolean twoSided) {
    public static Target atLeast(double b) {
      return new Target(true, b, false);
    }

    public static Target atMost(double b) {
      return new Target(false, b, false);
    }

    /** |value| at most {@code b}. */
    public static Target within(double b) {
      return new Target(false, b, true);
    }

    public boolean met(double v) {
      return twoSided ? Math.abs(v) <= bound : atLeast ? v >= bound : v <= bound;
    }

    @Override
    public String toString() {
      return twoSided ? "within ±" + fmt(bound) : (atLeast ? ">= " : "<= ") + fmt(bound);
    }
  }

  /** A Markdown table whose rows are also JSON records (column name to value). */
  public static final class Table {
    final String section;
    final String title;
    final List<String> columns;
    final List<List<Object>> rows = new ArrayList<>();

    Table(String section, String title, List<String> columns) {
      this.section = section;
      this.title = title;
      this.columns = List.copyOf(columns);
    }

    public Table row(Object... values) {
      if (values.length != columns.size()) {
        throw new IllegalArgumentException(
            title + ": " + values.length + " values for " + columns.size() + " columns");
      }
      rows.add(List.of(values));
      return this;
    }

    List<Map<String, Object>> records() {
      List<Map<String, Object>> out = new ArrayList<>();
      for (List<Object> r : rows) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < columns.size(); i++) {
          Object v = r.get(i);
          m.put(columns.get(i), v instanceof Double d && d.isNaN() ? null : v);
        }
        out.add(m);
      }
      return out;
    }
  }

  public void machine(String key, Object value) {
    machine.put(key, value);
  }

  public Table table(String section, String title, String... columns) {
    Table t = new Table(section, title, List.of(columns));
    tables.add(t);
    return t;
  }

  public synchronized void ratio(String name, double value, Target target, String baseline) {
    ratios.removeIf(r -> r.name.equals(name));
    ratios.add(new Ratio(name, value, target, baseline));
  }

  public List<Ratio> ratios() {
    return List.copyOf(ratios);
  }

  public void note(String section, String line) {
    notes.computeIfAbsent(section, k -> new ArrayList<>()).add(line);
  }

  /** Extra JSON data under {@code key} (raw numbers, profiles). */
  public void extra(String key, Object value) {
    extra.put(key, value);
  }

  public static String fmt(double v) {
    if (Double.isNaN(v)) {
      return "n/a";
    }
    double a = Math.abs(v);
    if (a >= 1000) {
      return String.format(Locale.ROOT, "%.0f", v);
    }
    if (a >= 100) {
      return String.format(Locale.ROOT, "%.1f", v);
    }
    if (a >= 1) {
      return String.format(Locale.ROOT, "%.2f", v);
    }
    return String.format(Locale.ROOT, "%.3f", v);
  }

  private static String cell(Object v) {
    if (v instanceof Double d) {
      return fmt(d);
    }
    if (v instanceof Float f) {
      return fmt(f);
    }
    return String.valueOf(v);
  }

  /** The ratio lines, one per ratio, as the issue names them. */
  public String ratioLines() {
    StringBuilder sb = new StringBuilder();
    for (Ratio r : ratios) {
      sb.append("ratio ")
          .append(r.name)
          .append('=')
          .append(String.format(Locale.ROOT, "%.3f", r.value))
          .append('\n');
    }
    return sb.toString();
  }

  public String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("# paramserver benchmark results\n\n");
    sb.append(
        "Produced by `scripts/bench.sh`; every ratio compares measurements of the same run.\n\n");
    machine.forEach((k, v) -> sb.append("- ").append(k).append(": ").append(v).append('\n'));
    sb.append("\n## Ratios against targets\n\n");
    sb.append("| ratio | value | target | met | baseline |\n| --- | ---: | --- | --- | --- |\n");
    for (Ratio r : ratios) {
      Boolean met = r.met();
      sb.append("| `")
          .append(r.name)
          .append("` | ")
          .append(String.format(Locale.ROOT, "%.3f", r.value))
          .append(" | ")
          .append(r.target == null ? "" : r.target.toString())
          .append(" | ")
          .append(met == null ? "" : met ? "yes" : "**no**")
          .append(" | ")
          .append(r.baseline == null ? "" : r.baseline)
          .append(" |\n");
    }
    String section = null;
    for (Table t : tables) {
      if (!t.section.equals(section)) {
        section = t.section;
        sb.append("\n## ").append(section).append('\n');
      }
      sb.append("\n### ").append(t.title).append("\n\n|");
      t.columns.forEach(c -> sb.append(' ').append(c).append(" |"));
      sb.append("\n|");
      t.columns.forEach(c -> sb.append(" --- |"));
      sb.append('\n');
      for (List<Object> r : t.rows) {
        sb.append('|');
        r.forEach(v -> sb.append(' ').append(cell(v)).append(" |"));
        sb.append('\n');
      }
    }
    notes.forEach(
        (sec, lines) -> {
          sb.append("\n## ").append(sec).append("\n\n");
          lines.forEach(l -> sb.append(l).append('\n'));
        });
    return sb.toString();
  }

  public Map<String, Object> json() {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("machine", machine);
    Map<String, Object> rs = new LinkedHashMap<>();
    Map<String, Object> ts = new LinkedHashMap<>();
    for (Ratio r : ratios) {
      rs.put(r.name, Double.isNaN(r.value) ? null : r.value);
      if (r.target != null) {
        Map<String, Object> t = new LinkedHashMap<>();
        if (r.target.twoSided) {
          t.put("min", -r.target.bound);
          t.put("max", r.target.bound);
        } else {
          t.put(r.target.atLeast ? "min" : "max", r.target.bound);
        }
        t.put("met", r.met());
        ts.put(r.name, t);
      }
    }
    root.put("ratios", rs);
    root.put("targets", ts);
    Map<String, Object> sections = new LinkedHashMap<>();
    for (Table t : tables) {
      @SuppressWarnings("unchecked")
      Map<String, Object> sec =
          (Map<String, Object>) sections.computeIfAbsent(t.section, k -> new LinkedHashMap<>());
      sec.put(t.title, t.records());
    }
    root.put("sections", sections);
    root.put("notes", notes);
    root.putAll(extra);
    return root;
  }

  /** Writes results.md and results.json into {@code dir}. */
  public void write(Path dir) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("results.md"), markdown());
    Files.writeString(
        dir.resolve("results.json"),
        JsonMapper.builder()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build()
            .writeValueAsString(json()));
  }
}
