package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.testsupport.S3Server;
import dev.paramserver.testsupport.TempDirs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job whose training data, test data, checkpoints and model all live in an S3-compatible bucket
 * (s3proxy in a child process): etcd, a master, two pservers and a trainer as real processes, none
 * of which sees the data on a local disk. The master indexes the objects by ranged reads, the
 * trainer reads its tasks' chunks by ranged reads, the pservers checkpoint into the bucket (a
 * pserver killed mid-job comes back from its checkpoint there) and the trainer uploads the model,
 * which psctl evaluate then checks.
 */
class S3EndToEndTest {
  @TempDir Path dir;

  @Test
  void jobOnABucket_trainsCheckpointsAndWritesTheModelIntoIt() throws Exception {
    try (S3Server s3 = S3Server.start();
        Storage storage =
            Storage.create(
                new S3Settings(s3.endpoint(), null, true, S3Server.ACCESS_KEY, S3Server.SECRET_KEY),
                "test")) {
      s3.createBucket("jobs");
      // the data exists only in the bucket: generated here, uploaded, deleted
      Path local = TempDirs.create("s3-e2e-data");
      DemoData.Result demo =
          DemoData.generate(
              local, DemoData.Options.builder().train(12000).test(3000).shards(2).build());
      try (Stream<Path> files = Files.list(local)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".recordio")).toList()) {
          storage.upload(f, "s3://jobs/demo/" + f.getFileName());
        }
      }
      String testObject = "s3://jobs/demo/" + demo.testFile().getFileName();
      TempDirs.deleteRecursively(local);

      int passes = 2;
      ClusterSpec.Builder spec =
          Jobs.spec(dir.resolve("run"))
              .job("s3-e2e")
              .masters(1)
              .pservers(2)
              .trainers(1)
              .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
              .property(Role.TRAINER, "paramserver.trainer.train-data", "s3://jobs/demo/train-*")
              .property(Role.TRAINER, "paramserver.trainer.test-data", testObject)
              .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
              .property(Role.TRAINER, "paramserver.trainer.model-output", "s3://jobs/out/model.pb")
              .property(Role.PSERVER, "paramserver.pserver.checkpoint-dir", "s3://jobs/ckpt")
              .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "2s")
              // the write-ahead log stays on local disk (segments are named by shard index)
              .property(Role.PSERVER, "paramserver.pserver.wal.dir", dir.resolve("wal").toString());
      for (Role role : List.of(Role.MASTER, Role.PSERVER, Role.TRAINER)) {
        String p = "paramserver." + role.id() + ".s3.";
        spec.property(role, p + "endpoint", s3.endpoint())
            .property(role, p + "path-style", "true")
            .property(role, p + "access-key", S3Server.ACCESS_KEY)
            .property(role, p + "secret-key", S3Server.SECRET_KEY);
      }
      try (LocalCluster cluster = new LocalCluster(spec.build())) {
        cluster.start();
        // once tasks are being done, a pserver dies: it must come back from its checkpoint in the
        // bucket (streamed, CRC-checked) plus its local write-ahead log
        cluster.awaitJob(s -> s.tasks().done() >= 3 || s.pass() > 0, Duration.ofMinutes(3));
        cluster.kill(Role.PSERVER, 1);
        cluster.awaitReady(Role.PSERVER, 1, Duration.ofMinutes(2));
        JobStatusView end =
            cluster.awaitJob(
                s ->
                    s.isFailed()
                        || s.isFinished()
                            && s.passes().size() == passes
                            && s.passes().get(passes - 1).evalReports() >= 1,
                Duration.ofMinutes(5));
        assertThat(end.state()).as("job; failure: %s", end.failureReason()).isEqualTo("FINISHED");
        Jobs.assertEveryTaskDoneInEveryPass(end, passes);
        double accuracy = end.passes().get(passes - 1).evalAccuracy();
        assertThat(accuracy).as("test accuracy after the last pass").isGreaterThan(0.90);

        // both pservers checkpointed into the bucket
        try (Stream<Path> ckpts = Files.list(s3.bucketDir("jobs").resolve("ckpt"))) {
          List<String> names = ckpts.map(p -> p.getFileName().toString()).toList();
          assertThat(names)
              .anyMatch(n -> n.startsWith("ps-0-step"))
              .anyMatch(n -> n.startsWith("ps-1-step"));
        }

        Path pserverLog = cluster.process(Role.PSERVER, 1).log();
        assertThat(Files.readString(pserverLog))
            .containsPattern("pserver \\d loaded checkpoint s3://jobs/ckpt/ps-\\d-step\\d+-");

        // the model was uploaded; psctl evaluate on it reproduces the job's accuracy
        Poll.untilExists(storage, "s3://jobs/out/model.pb");
        Path model = dir.resolve("model.pb");
        try (var in = storage.openStream("s3://jobs/out/model.pb")) {
          Files.copy(in, model);
        }
        Path test = dir.resolve("test.recordio");
        try (var in = storage.openStream(testObject)) {
          Files.copy(in, test);
        }
        assertThat(ModelsEndToEndTest.evaluated(model, test, "accuracy"))
            .isCloseTo(accuracy, org.assertj.core.data.Offset.offset(0.005));
      }
    }
  }

  /** Polling for an object (the model is written as the job ends). */
  private static final class Poll {
    static void untilExists(Storage storage, String uri) {
      dev.paramserver.testsupport.Poll.until(
          Duration.ofSeconds(60),
          () -> {
            try {
              return storage.exists(uri);
            } catch (java.io.IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          },
          uri + " to be written");
    }
  }
}
