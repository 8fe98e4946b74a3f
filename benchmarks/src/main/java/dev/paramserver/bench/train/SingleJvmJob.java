package dev.paramserver.bench.train;

import dev.paramserver.bench.cpu.CpuSampler;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The single-JVM baseline of a workload: {@link SingleJvmTrainer} in a JVM of its own with the
 * trainer's JVM options ({@link Workload#singleJvmOptions}: with the workload's heap, if it sets
 * one), so that its start-up counts as a distributed job's does.
 */
final class SingleJvmJob {
  /**
   * The one JVM's training thread, Java's {@code main}: the launcher starts it before the JVM names
   * threads, so the kernel knows it by the process's name (as it does the idle primordial thread).
   */
  static final String TRAIN_THREAD = "java";

  private static final Pattern PASS =
      Pattern.compile("pass=([0-9]+) records=([0-9]+) seconds=([0-9.E-]+)");

  private SingleJvmJob() {}

  static Outcome run(Workload w) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(w.singleJvmOptions());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SingleJvmTrainer.class.getName());
    cmd.addAll(SingleJvmTrainer.arguments(w));
    return run(w, cmd, "the single-JVM trainer");
  }

  /**
   * Runs a baseline process {@code cmd} that prints {@code pass=<i> records=<n> seconds=<s>} per
   * pass and {@code accuracy=}/{@code auc=} (and for a sparse model {@code rows_per_sample=}) at
   * the end, and returns its figures.
   */
  static Outcome run(Workload w, List<String> cmd, String what) throws Exception {
    long launched = System.nanoTime();
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    List<Double> perPass = new ArrayList<>();
    long steadyRecords = 0;
    double steadySeconds = 0;
    long windowRecords = 0;
    double windowSeconds = 0;
    long t0 = 0;
    long t1 = 0;
    long records = 0;
    CpuSampler sampler = CpuSampler.start();
    sampler.watch("single", p.pid(), TRAIN_THREAD);
    Map<String, Double> figures = new LinkedHashMap<>();
    List<String> other = new ArrayList<>();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        Matcher m = PASS.matcher(line);
        if (m.matches()) {
          int pass = Integer.parseInt(m.group(1));
          long n = Long.parseLong(m.group(2));
          double secs = Double.parseDouble(m.group(3));
          long now = System.nanoTime();
          perPass.add(n / secs);
          records += n;
          if (pass == 0) {
            sampler.sampleNow();
            t0 = now;
          } else {
            windowRecords += n;
            windowSeconds += secs;
            t1 = now;
          }
          if (pass >= TrainSuite.firstSteadyPass(w.passes())) {
            steadyRecords += n;
            steadySeconds += secs;
          }
        } else if (line.matches("(accuracy|auc|rows_per_sample)=[-0-9.NaE]+")) {
          String[] kv = line.split("=");
          figures.put(kv[0], Double.parseDouble(kv[1]));
        } else {
          other.add(line);
        }
      }
    }
    Map<String, Double> window = new LinkedHashMap<>();
    try (sampler) {
      window.put("window_seconds", windowSeconds);
      window.put("window_records", (double) windowRecords);
      window.put("window_ahead_records", 0.0);
      if (windowRecords > 0) {
        window.putAll(sampler.window(t0, t1, windowRecords).figures());
      }
    }
    if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0 || perPass.isEmpty()) {
      p.destroyForcibly();
      throw new IllegalStateException(
          what + " of " + w.name() + " failed: " + String.join("\n", other));
    }
    double whole = records / ((System.nanoTime() - launched) / 1e9);
    Double rowsPerSample = figures.get("rows_per_sample");
    return new Outcome(
        windowRecords > 0 ? windowRecords / windowSeconds : Double.NaN,
        whole,
        figures.getOrDefault(w.metric(), Double.NaN),
        perPass.get(0),
        perPass,
        Double.NaN,
        Double.NaN,
        Map.of(),
        rowsPerSample == null ? Map.of() : Map.of("rows_per_sample", rowsPerSample),
        steadyRecords / steadySeconds,
        window);
  }
}
