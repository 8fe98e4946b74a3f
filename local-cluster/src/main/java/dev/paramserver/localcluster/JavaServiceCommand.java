package dev.paramserver.localcluster;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Runs a service's executable jar with the shared properties of the cluster plus its own. */
final class JavaServiceCommand implements ServiceCommand {
  static final JavaServiceCommand INSTANCE = new JavaServiceCommand();
  private static final String NICE = "/usr/bin/nice";

  private static final String SH = "/bin/sh";
  private static final Path AUTOGROUP = Path.of("/proc/self/autogroup");
  // run by sh after setsid (Launcher.wrap): sets the new session's autogroup nice to $0, then
  // execs the rest in place
  private static final String SET_AUTOGROUP =
      "echo \"$0\" > /proc/self/autogroup 2>/dev/null; exec \"$@\"";

  private JavaServiceCommand() {}

  /**
   * The prefix that starts a command at nice {@code nice} (empty at 0): {@code nice -n}, and where
   * the kernel groups processes by session (autogroup, on by default in Debian's kernels), a shell
   * that first gives the command's session, its own since {@link
   * dev.paramserver.launcher.Launcher#wrap}, the same nice value. The scheduler shares the CPU
   * between autogroups first, by the groups' nice values, and by the threads' nice values only
   * within a group: without it, a niced process in a session of its own takes as much CPU as any
   * other. Each step execs in place: the pid stays the service's.
   */
  static List<String> niced(int nice) {
    if (nice <= 0 || !Files.isExecutable(Path.of(NICE))) {
      return List.of();
    }
    List<String> cmd = new ArrayList<>();
    if (Files.isRegularFile(AUTOGROUP) && Files.isExecutable(Path.of(SH))) {
      cmd.addAll(List.of(SH, "-c", SET_AUTOGROUP, Integer.toString(nice)));
    }
    cmd.addAll(List.of(NICE, "-n", Integer.toString(nice)));
    return cmd;
  }

  @Override
  public List<String> build(LaunchContext ctx) {
    ClusterSpec spec = ctx.spec();
    Path jar = spec.jar(ctx.role());
    if (jar == null) {
      throw new IllegalStateException(
          "no executable jar configured for role "
              + ctx.role().id()
              + ": build it with ./mvnw -B -DskipTests package and pass its path to"
              + " ClusterSpec.Builder.jar");
    }
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(
          "executable jar of role "
              + ctx.role().id()
              + " not found at "
              + jar
              + ": build it with ./mvnw -B -DskipTests package");
    }
    List<String> cmd = new ArrayList<>(niced(spec.niceness(ctx.role())));
    cmd.add(spec.javaBinary());
    Optional<InRunRecordings.Start> recording =
        spec.classDataSharing()
            ? InRunRecordings.start(spec, ctx.role(), ctx.index())
            : Optional.empty();
    Map<String, String> props = properties(ctx);
    if (recording.isPresent()) {
      cmd.addAll(recording.get().jvmOptions());
      cmd.addAll(arguments(spec, ctx.role(), recording.get().jar(), props));
    } else if (spec.classDataSharing()) {
      ClassDataArchives.Launch launch = ClassDataArchives.launchOf(jar, spec.javaBinary());
      cmd.addAll(launch.jvmOptions());
      cmd.addAll(arguments(spec, ctx.role(), launch.jar(), props));
    } else {
      cmd.addAll(arguments(spec, ctx.role(), jar, props));
    }
    props.forEach((key, value) -> cmd.add("--" + key + "=" + value));
    return cmd;
  }

  /**
   * The JVM options of the role and the start-up options of the launch ({@link StartupOptions}),
   * then {@code -jar jar}.
   */
  private static List<String> arguments(
      ClusterSpec spec, Role role, Path jar, Map<String, String> props) {
    List<String> args = new ArrayList<>(spec.jvmOptions(role));
    args.addAll(StartupOptions.of(role, jar, spec.javaBinary(), props));
    args.add("-jar");
    args.add(jar.toString());
    return args;
  }

  /**
   * Whether the role's jar gets a class-data archive. Not serving-service's: it waits for the job's
   * shard count in etcd before its context is refreshed, so a run of its own would not end; its
   * processes start from the jar.
   */
  private static boolean recordsArchive(Role role) {
    return role != Role.SERVING;
  }

  /** Whether every jar the cluster launches has its class-data archive already. */
  static boolean archivesReady(ClusterSpec spec) {
    for (Role role : Role.values()) {
      Path jar = spec.jar(role);
      if (recordsArchive(role)
          && spec.count(role) > 0
          && jar != null
          && Files.isRegularFile(jar)
          && ClassDataArchives.launchOf(jar, spec.javaBinary()).archive().isEmpty()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Makes the class-data archive of each role's jar the cluster launches, in parallel (see {@link
   * ClassDataArchives}); the training runs use the cluster's etcd under a job name of their own.
   */
  static void prepareArchives(ClusterSpec spec, String etcdEndpoint) {
    // run-local's processes record their own caches on a JDK 25 (begun already), else a job does
    boolean trained =
        InRunRecordings.recording(spec)
            || (spec.archiveTrainingJob() && ArchiveTrainingJob.run(spec));
    List<Thread> threads = new ArrayList<>();
    for (Role role : Role.values()) {
      Path jar = spec.jar(role);
      if ((trained && ArchiveTrainingJob.ROLES.contains(role))
          || !recordsArchive(role)
          || spec.count(role) == 0
          || jar == null
          || !Files.isRegularFile(jar)
          || ClassDataArchives.launchOf(jar, spec.javaBinary()).archive().isPresent()) {
        continue;
      }
      LaunchContext ctx = new LaunchContext(spec, role, 0, 0, 0, etcdEndpoint);
      // the role's properties only: a process's own (an etcd endpoint behind a proxy, say) may
      // not work yet
      Map<String, String> props = roleProperties(ctx);
      props.put("paramserver.job", "class-data-" + role.id());
      if (role == Role.PSERVER) {
        props.put(
            "paramserver.pserver.checkpoint-dir",
            spec.runDir().resolve("class-data-checkpoints").toString());
      }
      Thread t =
          new Thread(
              () ->
                  ClassDataArchives.prepare(
                      jar,
                      spec.javaBinary(),
                      extracted -> {
                        List<String> args = arguments(spec, role, extracted, props);
                        props.forEach((k, v) -> args.add("--" + k + "=" + v));
                        return args;
                      }),
              "class-data-" + role.id());
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /**
   * The Spring properties of the process, built-ins first; the spec's extra properties override
   * them (a property repeated on the command line would turn into a comma-joined list in Spring).
   */
  static Map<String, String> properties(LaunchContext ctx) {
    Map<String, String> props = roleProperties(ctx);
    props.putAll(ctx.spec().extraProperties(ctx.role(), ctx.index()));
    return props;
  }

  /** {@link #properties} without the process's own extra properties. */
  private static Map<String, String> roleProperties(LaunchContext ctx) {
    ClusterSpec spec = ctx.spec();
    Map<String, String> props = new LinkedHashMap<>();
    props.put("server.address", "127.0.0.1");
    props.put("server.port", Integer.toString(ctx.httpPort()));
    if (ctx.role().hasGrpcServer()) {
      props.put("spring.grpc.server.address", "127.0.0.1");
      props.put("spring.grpc.server.port", Integer.toString(ctx.grpcPort()));
    }
    props.put("paramserver.job", spec.job());
    boolean throughMaster =
        ctx.role() == Role.TRAINER && spec.trainersThroughMaster() && !ctx.masters().isEmpty();
    if (throughMaster) {
      // no etcd settings at all: the trainer asks the masters' Coordination service instead
      props.put("paramserver.trainer.coordination.mode", "master");
      props.put("paramserver.trainer.coordination.masters", String.join(",", ctx.masters()));
    } else {
      props.put("paramserver.etcd.endpoints", ctx.etcdEndpoint());
    }
    props.put("paramserver.admin.token", spec.adminToken());
    props.put("paramserver.advertise-host", "127.0.0.1");
    switch (ctx.role()) {
      case PSERVER -> {
        // with replicas = 2 every other process is a backup: count / replicas shards
        int replicas =
            Integer.parseInt(
                spec.extraProperties(Role.PSERVER)
                    .getOrDefault("paramserver.pserver.replicas", "1")
                    .trim());
        props.put(
            "paramserver.pserver.desired",
            Integer.toString(Math.max(1, spec.count(Role.PSERVER) / Math.max(1, replicas))));
        props.put(
            "paramserver.pserver.checkpoint-dir",
            spec.runDir().resolve("checkpoints").resolve("pserver-" + ctx.index()).toString());
      }
      case TRAINER -> props.put("paramserver.trainer.id", "trainer-" + ctx.index());
      // run tracking in the run folder: metrics.jsonl, params.json and the TensorBoard event file
      // (so `tensorboard --logdir runs` shows every run, with its hyperparameters)
      case MASTER -> props.put("paramserver.master.tracking.dir", spec.runDir().toString());
      // a serving replica reads the number of shards and their primaries from etcd
      case SERVING -> {}
    }
    props.putAll(spec.extraProperties(ctx.role()));
    return props;
  }
}
