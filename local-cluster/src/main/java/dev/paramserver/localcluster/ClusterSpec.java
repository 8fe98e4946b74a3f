package dev.paramserver.localcluster;

import dev.paramserver.launcher.EtcdProcess;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a {@link LocalCluster} runs: how many processes of each role, from which jars, with which
 * JVM options and extra properties, in which run folder. Immutable; build it with {@link
 * #builder(Path)}.
 */
public final class ClusterSpec {
  private final Path runDir;
  private final String job;
  private final Map<Role, Integer> counts;
  private final Map<Role, Path> jars;
  private final String javaBinary;
  private final Map<Role, Map<String, String>> extraProperties;
  private final Map<Role, Map<Integer, Map<String, String>>> processProperties;
  private final Map<Role, List<String>> jvmOptions;
  private final String adminToken;
  private final String etcdBinary;
  private final int maxRestarts;
  private final Duration restartBackoff;
  private final Duration startTimeout;
  private final Duration stopTimeout;
  private final ServiceCommand command;
  private final boolean classDataSharing;
  private final boolean archiveTrainingJob;
  private final boolean trainersThroughMaster;
  private final boolean probeHttp;
  private final int trainingNiceness;

  /** The nice value of trainers and pservers beside serving replicas ({@link #niceness}). */
  public static final int TRAINING_NICENESS_BESIDE_SERVING = 10;

  private ClusterSpec(Builder b) {
    this.runDir = b.runDir.toAbsolutePath().normalize();
    this.job = b.job;
    this.counts = Map.copyOf(b.counts);
    this.jars = Map.copyOf(b.jars);
    this.javaBinary = b.javaBinary;
    Map<Role, Map<String, String>> extras = new EnumMap<>(Role.class);
    b.extraProperties.forEach((role, map) -> extras.put(role, copyOrdered(map)));
    this.extraProperties = extras;
    Map<Role, Map<Integer, Map<String, String>>> perProcess = new EnumMap<>(Role.class);
    b.processProperties.forEach(
        (role, byIndex) -> {
          Map<Integer, Map<String, String>> copy = new LinkedHashMap<>();
          byIndex.forEach((i, map) -> copy.put(i, copyOrdered(map)));
          perProcess.put(role, copy);
        });
    this.processProperties = perProcess;
    Map<Role, List<String>> opts = new EnumMap<>(Role.class);
    for (Role role : Role.values()) {
      opts.put(role, List.copyOf(b.jvmOptions.getOrDefault(role, defaultJvmOptions(role))));
    }
    this.jvmOptions = opts;
    this.adminToken = b.adminToken != null ? b.adminToken : randomToken();
    this.etcdBinary = b.etcdBinary;
    this.maxRestarts = b.maxRestarts;
    this.restartBackoff = b.restartBackoff;
    this.startTimeout = b.startTimeout;
    this.stopTimeout = b.stopTimeout;
    this.command = b.command;
    this.classDataSharing = b.classDataSharing;
    this.archiveTrainingJob = b.archiveTrainingJob;
    this.trainersThroughMaster = b.trainersThroughMaster;
    this.probeHttp = b.probeHttp;
    this.trainingNiceness = b.trainingNiceness;
  }

  /** A builder for a cluster whose logs, checkpoints, etcd data and cluster.json go in runDir. */
  public static Builder builder(Path runDir) {
    return new Builder(runDir);
  }

  /**
   * Small-footprint JVM options per role: masters use C1 only and a small heap (they start fast and
   * do little arithmetic); pservers and trainers keep C2 for their float loops; serving replicas
   * use a concurrent collector (ZGC). Every role but the pservers takes {@link
   * #START_UP_JIT_OPTIONS}: a pserver starts under load (a takeover, scaling), and its push path
   * compiled seconds later with them (docs/how-to/run-locally.md, "JIT settings").
   */
  public static List<String> defaultJvmOptions(Role role) {
    List<String> options =
        new ArrayList<>(
            switch (role) {
              case MASTER ->
                  List.of(
                      "-Xms32m",
                      "-Xmx384m",
                      "-XX:+UseSerialGC",
                      "-XX:TieredStopAtLevel=1",
                      "-XX:+ExitOnOutOfMemoryError");
              // a roomy young generation: every push and pull allocates its tensors, and a 64 MB
              // start heap made the pserver collect about eight times a second (JFR,
              // bench/results.md)
              case PSERVER, TRAINER ->
                  List.of(
                      "-Xms256m",
                      "-Xmn128m",
                      "-Xmx1g",
                      "-XX:+UseSerialGC",
                      "-XX:+ExitOnOutOfMemoryError");
              // a serving replica answers lookups within milliseconds while its follower applies
              // the job's pushes: the serial collector's young collections stopped it for 100 to
              // 800 ms each on a busy machine (more while a shard copy was promoted) and its
              // metaspace-triggered full collections for 0.5 to 1.4 s, the tail of its lookups
              // (docs/explanation/serving.md). ZGC collects concurrently (generational from Java
              // 23), its pauses are below a millisecond.
              case SERVING ->
                  List.of("-Xms256m", "-Xmx1g", "-XX:+UseZGC", "-XX:+ExitOnOutOfMemoryError");
            });
    if (role != Role.PSERVER) {
      options.addAll(START_UP_JIT_OPTIONS);
    }
    return List.copyOf(options);
  }

  /**
   * A method is compiled by C1 after 1,000 calls instead of 200 (loops: 100,000 back edges instead
   * of 60,000): most of what a service runs while it starts (Spring's bean creation, configuration
   * binding, class and proxy generation) runs a few hundred times and is no longer compiled, while
   * what training runs millions of times is compiled as before, by C2 at the same thresholds. A
   * third of the CPU a 1 + 1 job spends until its first task went to the JIT. Measured with {@code
   * scripts/bench.sh --only startup --quick} on Temurin 25 at load average 25 to 30: 10.5 to 11.1
   * CPU-s to the first task instead of 11.5 to 12.6; the click-through job's CPU per sample in its
   * measured window (JIT excluded) 65.1 µs median instead of 66.6 ({@code --only train --workloads
   * ctr --quick}), so training is not slower.
   */
  public static final List<String> START_UP_JIT_OPTIONS =
      List.of(
          "-XX:Tier3InvocationThreshold=1000",
          "-XX:Tier3MinInvocationThreshold=500",
          "-XX:Tier3CompileThreshold=10000",
          "-XX:Tier3BackEdgeThreshold=100000");

  /** 32 random hex characters. */
  public static String randomToken() {
    byte[] bytes = new byte[16];
    new SecureRandom().nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }

  /**
   * The etcd binary: {@code $ETCD_BIN}, else {@code etcd} on the PATH, else {@code /usr/bin/etcd}.
   */
  public static String findEtcdBinary() {
    return EtcdProcess.findBinary();
  }

  public Path runDir() {
    return runDir;
  }

  public String job() {
    return job;
  }

  /** How many processes of this role the cluster starts. */
  public int count(Role role) {
    return counts.getOrDefault(role, 0);
  }

  /** The executable jar of the role, or null when none was set. */
  public Path jar(Role role) {
    return jars.get(role);
  }

  public String javaBinary() {
    return javaBinary;
  }

  /** Extra Spring properties of the role (key without the leading dashes), in insertion order. */
  public Map<String, String> extraProperties(Role role) {
    return extraProperties.getOrDefault(role, Map.of());
  }

  /**
   * Extra Spring properties of the process {@code index} of the role alone, applied after (and so
   * overriding) the role's.
   */
  public Map<String, String> extraProperties(Role role, int index) {
    return processProperties.getOrDefault(role, Map.of()).getOrDefault(index, Map.of());
  }

  public List<String> jvmOptions(Role role) {
    return jvmOptions.get(role);
  }

  public String adminToken() {
    return adminToken;
  }

  public String etcdBinary() {
    return etcdBinary != null ? etcdBinary : findEtcdBinary();
  }

  /** Automatic restarts allowed per process before it is marked FAILED. */
  public int maxRestarts() {
    return maxRestarts;
  }

  /** Delay before the first automatic restart; doubled per restart of the same process, max 8x. */
  public Duration restartBackoff() {
    return restartBackoff;
  }

  /** How long {@link LocalCluster#start()} waits for every process to listen on its HTTP port. */
  public Duration startTimeout() {
    return startTimeout;
  }

  /** How long a graceful stop waits after SIGTERM before SIGKILL. */
  public Duration stopTimeout() {
    return stopTimeout;
  }

  public ServiceCommand command() {
    return command;
  }

  /**
   * Whether services start from a class-data archive of their jar ({@link ClassDataArchives}):
   * about twice as fast; on unless {@code PARAMSERVER_CDS=off}.
   */
  public boolean classDataSharing() {
    return classDataSharing;
  }

  /**
   * Whether missing archives are recorded by one short training job of the three services ({@link
   * ArchiveTrainingJob}: smaller start-up cost afterwards, the job's too) rather than by each
   * service started alone up to its refreshed context (default: quicker to make).
   */
  public boolean archiveTrainingJob() {
    return archiveTrainingJob;
  }

  /**
   * Whether the trainers coordinate through the masters' Coordination service ({@code
   * paramserver.trainer.coordination.mode=master}, with every master's gRPC address) and are given
   * no etcd settings; false (default): they reach etcd themselves.
   */
  public boolean trainersThroughMaster() {
    return trainersThroughMaster;
  }

  /**
   * The nice value (0 to 19) the role's processes start at. Training takes every core it gets, a
   * serving replica that waits for a core behind it answers a whole queue late: trainers and
   * pservers start at {@link #TRAINING_NICENESS_BESIDE_SERVING} beside serving replicas, else at 0
   * ({@link Builder#trainingNiceness} sets it); masters and replicas at 0.
   */
  public int niceness(Role role) {
    if (role != Role.TRAINER && role != Role.PSERVER) {
      return 0;
    }
    if (trainingNiceness >= 0) {
      return trainingNiceness;
    }
    return count(Role.SERVING) > 0 ? TRAINING_NICENESS_BESIDE_SERVING : 0;
  }

  /** Whether a process counts as RUNNING only once its HTTP port accepts connections. */
  public boolean probeHttp() {
    return probeHttp;
  }

  private static Map<String, String> copyOrdered(Map<String, String> map) {
    return Collections.unmodifiableMap(new LinkedHashMap<>(map));
  }

  /** Builds a {@link ClusterSpec}; every setting has a default except the run folder. */
  public static final class Builder {
    private final Path runDir;
    private String job = "local";
    private final Map<Role, Integer> counts =
        new EnumMap<>(Map.of(Role.MASTER, 1, Role.PSERVER, 2, Role.TRAINER, 2));
    private final Map<Role, Path> jars = new EnumMap<>(Role.class);
    private String javaBinary = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    private final Map<Role, Map<String, String>> extraProperties = new EnumMap<>(Role.class);
    private final Map<Role, Map<Integer, Map<String, String>>> processProperties =
        new EnumMap<>(Role.class);
    private final Map<Role, List<String>> jvmOptions = new EnumMap<>(Role.class);
    private String adminToken;
    private String etcdBinary;
    private int maxRestarts = 5;
    private Duration restartBackoff = Duration.ofMillis(500);
    private Duration startTimeout = Duration.ofSeconds(180);
    private Duration stopTimeout = Duration.ofSeconds(20);
    private ServiceCommand command = ServiceCommand.javaServices();
    private boolean classDataSharing = ClassDataArchives.enabled();
    private boolean archiveTrainingJob;
    private boolean trainersThroughMaster;
    private boolean probeHttp = true;
    // -1: by whether serving replicas run (see ClusterSpec#niceness)
    private int trainingNiceness = -1;

    private Builder(Path runDir) {
      this.runDir = Objects.requireNonNull(runDir, "runDir");
    }

    public Builder job(String job) {
      if (job == null || !job.matches("[A-Za-z0-9._-]+")) {
        throw new IllegalArgumentException(
            "job name '" + job + "' must be non-empty and use only letters, digits, '.', '_', '-'");
      }
      this.job = job;
      return this;
    }

    public Builder masters(int n) {
      return count(Role.MASTER, n);
    }

    public Builder pservers(int n) {
      return count(Role.PSERVER, n);
    }

    public Builder trainers(int n) {
      return count(Role.TRAINER, n);
    }

    /** Serving replicas (serving-service) following the job; none by default. */
    public Builder serving(int n) {
      return count(Role.SERVING, n);
    }

    /**
     * Sets how many processes of the role to run, 0 to 64 (0 lets a test run, say, only etcd and
     * masters).
     */
    public Builder count(Role role, int n) {
      if (n < 0 || n > 64) {
        throw new IllegalArgumentException(role.id() + " count must be between 0 and 64, got " + n);
      }
      counts.put(role, n);
      return this;
    }

    /** The executable jar of a role (for example master-service/target/...-exec.jar). */
    public Builder jar(Role role, Path jar) {
      jars.put(role, jar.toAbsolutePath().normalize());
      return this;
    }

    /**
     * Sets the jar of every role from the newest {@code <module>-*-exec.jar} in {@code dir}, or in
     * {@code dir/<module>/target} (so {@code dir} may be the repository root).
     *
     * @throws LocalClusterException naming the missing jars
     */
    public Builder serviceJars(Path dir) {
      JarLocator.locate(dir).forEach(this::jar);
      return this;
    }

    /**
     * Sets the jar of every role from the repository found through {@code $PARAMSERVER_HOME}, the
     * working directory or its parents (as in a module's tests).
     *
     * @throws LocalClusterException when the repository or a jar is not found
     */
    public Builder serviceJars() {
      JarLocator.locate(null).forEach(this::jar);
      return this;
    }

    public Builder javaBinary(String javaBinary) {
      this.javaBinary = Objects.requireNonNull(javaBinary);
      return this;
    }

    /** Adds a Spring property {@code key=value} (passed as {@code --key=value}) to the role. */
    public Builder property(Role role, String key, String value) {
      String k = key.startsWith("--") ? key.substring(2) : key;
      if (k.isBlank() || k.contains("=")) {
        throw new IllegalArgumentException("bad property name '" + key + "' for " + role.id());
      }
      extraProperties.computeIfAbsent(role, r -> new LinkedHashMap<>()).put(k, value);
      return this;
    }

    /**
     * Adds a Spring property to process {@code index} of the role only (for example its own etcd
     * endpoint or advertised port); it overrides a property of the role with the same key.
     */
    public Builder property(Role role, int index, String key, String value) {
      String k = key.startsWith("--") ? key.substring(2) : key;
      if (k.isBlank() || k.contains("=") || index < 0) {
        throw new IllegalArgumentException(
            "bad property '" + key + "' for " + role.id() + " " + index);
      }
      processProperties
          .computeIfAbsent(role, r -> new LinkedHashMap<>())
          .computeIfAbsent(index, i -> new LinkedHashMap<>())
          .put(k, value);
      return this;
    }

    /** Adds every entry of {@code props} as a property of the role. */
    public Builder properties(Role role, Map<String, String> props) {
      props.forEach((k, v) -> property(role, k, v));
      return this;
    }

    /** Replaces the JVM options of the role (see {@link ClusterSpec#defaultJvmOptions(Role)}). */
    public Builder jvmOptions(Role role, List<String> options) {
      jvmOptions.put(role, List.copyOf(options));
      return this;
    }

    /** The bearer token for /admin/**; a random 32-hex token by default. */
    public Builder adminToken(String token) {
      this.adminToken = Objects.requireNonNull(token);
      return this;
    }

    public Builder etcdBinary(String binary) {
      this.etcdBinary = binary;
      return this;
    }

    public Builder maxRestarts(int n) {
      if (n < 0) {
        throw new IllegalArgumentException("maxRestarts must be >= 0, got " + n);
      }
      this.maxRestarts = n;
      return this;
    }

    public Builder restartBackoff(Duration backoff) {
      this.restartBackoff = Objects.requireNonNull(backoff);
      return this;
    }

    public Builder startTimeout(Duration timeout) {
      this.startTimeout = Objects.requireNonNull(timeout);
      return this;
    }

    public Builder stopTimeout(Duration timeout) {
      this.stopTimeout = Objects.requireNonNull(timeout);
      return this;
    }

    /** The nice value of trainers and pservers, 0 to 19 (see {@link ClusterSpec#niceness}). */
    public Builder trainingNiceness(int nice) {
      if (nice < 0 || nice > 19) {
        throw new IllegalArgumentException(
            "the training processes' nice value must be 0 to 19, got " + nice);
      }
      this.trainingNiceness = nice;
      return this;
    }

    /** See {@link ClusterSpec#trainersThroughMaster()}. */
    public Builder trainersThroughMaster(boolean on) {
      this.trainersThroughMaster = on;
      return this;
    }

    /** Starts services from class-data archives of their jars (see {@link ClassDataArchives}). */
    public Builder classDataSharing(boolean on) {
      this.classDataSharing = on;
      return this;
    }

    /** See {@link ClusterSpec#archiveTrainingJob()}. */
    public Builder archiveTrainingJob(boolean on) {
      this.archiveTrainingJob = on;
      return this;
    }

    /**
     * Replaces how processes are launched; {@code probeHttp=false} counts a process as RUNNING as
     * soon as it is alive (for commands that open no port).
     */
    public Builder command(ServiceCommand command, boolean probeHttp) {
      this.command = Objects.requireNonNull(command);
      this.probeHttp = probeHttp;
      return this;
    }

    public ClusterSpec build() {
      return new ClusterSpec(this);
    }
  }
}
