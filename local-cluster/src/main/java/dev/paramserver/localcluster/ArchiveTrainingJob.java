package dev.paramserver.localcluster;

import dev.paramserver.models.demo.DemoData;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes the services' start-up archives ({@link ClassDataArchives}) from one short training job
 * instead of a start to {@code onRefresh} per service: a master, a pserver and a trainer on a fresh
 * etcd train the demo softmax (20,000 records, one pass), each recording as it runs, and write
 * their archives as they exit. The archives then hold what a job needs after its context is up too
 * (the etcd client's connection, the gRPC calls between the services, the training loop) and, on an
 * AOT JDK (25), the method profiles of that work, so the JIT of a later start compiles the hot code
 * sooner. Roles whose archive exists run from it and record nothing.
 *
 * <p>Whatever fails only costs the speed-up: the job's archives are dropped and each service starts
 * from its jar (or the next cluster start tries again).
 */
final class ArchiveTrainingJob {
  private static final Logger log = LoggerFactory.getLogger(ArchiveTrainingJob.class);
  private static final Duration JOB_TIMEOUT = Duration.ofMinutes(4);
  private static final int RECORDS = 20_000;

  /** The roles a training job runs and so records archives of (serving replicas are not). */
  static final List<Role> ROLES = List.of(Role.MASTER, Role.PSERVER, Role.TRAINER);

  private ArchiveTrainingJob() {}

  /**
   * Makes the missing archives of {@code spec}'s three service jars (for its Java) by a training
   * job in {@code <runDir>/class-data-training}; returns whether it ran one.
   */
  static boolean run(ClusterSpec spec) {
    for (Role role : ROLES) {
      Path jar = spec.jar(role);
      if (jar == null || !Files.isRegularFile(jar)) {
        return false; // a job needs all three services
      }
    }
    // each jar is extracted by a JVM of its own: side by side
    Map<Role, ClassDataArchives.Recording> recordings =
        Collections.synchronizedMap(new EnumMap<>(Role.class));
    List<Role> missing =
        ROLES.stream()
            .filter(
                role ->
                    ClassDataArchives.launchOf(spec.jar(role), spec.javaBinary())
                        .archive()
                        .isEmpty())
            .toList();
    if (!inParallel(
        missing,
        role ->
            ClassDataArchives.begin(spec.jar(role), spec.javaBinary())
                .ifPresent(r -> recordings.put(role, r)))) {
      recordings.values().forEach(ClassDataArchives::abandon);
      return true;
    }
    if (recordings.isEmpty()) {
      return false;
    }
    long started = System.nanoTime();
    Path dir = spec.runDir().resolve("class-data-training");
    try {
      log.info(
          "recording the start-up archives of {} from a short training job (once per build)",
          recordings.keySet());
      DemoData.generate(
          dir.resolve("data"), DemoData.Options.builder().train(RECORDS).test(2_000).build());
      try (LocalCluster cluster = new LocalCluster(trainingSpec(spec, dir, recordings))) {
        cluster.start();
        JobStatusView end = cluster.awaitJobEnd(JOB_TIMEOUT);
        if (!end.isFinished()) {
          log.warn("the archives' training job ended {}: recording what it ran", end);
        }
        // SIGTERM to the master and the pserver at once: each writes what it recorded as it
        // exits, which takes seconds (close() would stop them one group after the other)
        inParallel(List.of(Role.MASTER, Role.PSERVER), role -> cluster.stop(role, 0));
      }
      // the archives are written side by side (on an AOT JDK each by a JVM of its own)
      if (!inParallel(
          List.copyOf(recordings.keySet()),
          role ->
              ClassDataArchives.finish(
                  recordings.get(role),
                  extracted -> {
                    List<String> cmd = new ArrayList<>(spec.jvmOptions(role));
                    cmd.add("-jar");
                    cmd.add(extracted.toString());
                    return cmd;
                  }))) {
        return true;
      }
      log.info(
          "start-up archives recorded in {} s", (System.nanoTime() - started) / 1_000_000_000L);
      return true;
    } catch (IOException | RuntimeException e) {
      log.warn(
          "the start-up archives' training job failed ({}): the services start from their jars",
          e.toString());
      recordings.values().forEach(ClassDataArchives::abandon);
      return true;
    } finally {
      deleteQuietly(dir.resolve("data"));
      deleteQuietly(dir.resolve("checkpoints"));
    }
  }

  /** The 1 + 1 job: recording roles run their extracted jars, the others their archives. */
  static ClusterSpec trainingSpec(
      ClusterSpec spec, Path dir, Map<Role, ClassDataArchives.Recording> recordings) {
    ClusterSpec.Builder b =
        ClusterSpec.builder(dir)
            .job("class-data")
            .masters(1)
            .pservers(1)
            .trainers(1)
            .javaBinary(spec.javaBinary())
            .etcdBinary(spec.etcdBinary())
            .classDataSharing(false)
            .maxRestarts(0)
            .startTimeout(JOB_TIMEOUT)
            // writing an archive at exit takes a few seconds on a busy machine: no SIGKILL then
            .stopTimeout(Duration.ofMinutes(2))
            .property(Role.MASTER, "paramserver.master.passes", "1")
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .property(Role.TRAINER, "paramserver.trainer.model", "softmax")
            .property(Role.TRAINER, "paramserver.trainer.optimizer", "sgd")
            .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
            .property(Role.TRAINER, "paramserver.trainer.batch-size", "64")
            .property(
                Role.TRAINER,
                "paramserver.trainer.train-data",
                dir.resolve("data").resolve("train-*.recordio").toString())
            .property(
                Role.TRAINER,
                "paramserver.trainer.test-data",
                dir.resolve("data").resolve("test-*.recordio").toString());
    for (Role role : ROLES) {
      List<String> options = new ArrayList<>();
      Optional<ClassDataArchives.Recording> r = Optional.ofNullable(recordings.get(role));
      if (r.isPresent()) {
        options.addAll(r.get().recordOptions());
        b.jar(role, r.get().extractedJar());
      } else {
        ClassDataArchives.Launch launch =
            ClassDataArchives.launchOf(spec.jar(role), spec.javaBinary());
        options.addAll(launch.jvmOptions());
        b.jar(role, launch.jar());
      }
      options.addAll(spec.jvmOptions(role));
      b.jvmOptions(role, options);
    }
    return b.build();
  }

  /**
   * Runs {@code action} for each role on a thread of its own and waits for all; false when
   * interrupted meanwhile (the interrupt flag is kept).
   */
  static boolean inParallel(List<Role> roles, Consumer<Role> action) {
    List<Thread> threads = new ArrayList<>();
    for (Role role : roles) {
      Thread t = new Thread(() -> action.accept(role), "class-data-" + role.id());
      t.start();
      threads.add(t);
    }
    try {
      for (Thread t : threads) {
        t.join();
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void deleteQuietly(Path dir) {
    try (var walk = Files.walk(dir)) {
      walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | RuntimeException e) {
      log.debug("cannot delete {}: {}", dir, e.toString());
    }
  }
}
