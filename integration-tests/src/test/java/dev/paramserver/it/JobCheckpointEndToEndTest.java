package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.JobCheckpoint;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Job-wide checkpoints on real processes: a synchronous job on two pservers with {@code
 * checkpoint-consistency=job} leaves complete job-wide ids in etcd whose two files hold the same
 * step; once the job is over (trainers gone) both pservers are stopped and started again, and both
 * come back at that step, serving exactly the values of their job-wide files, although each had
 * trained past it and checkpointed a newer state on its way out.
 */
class JobCheckpointEndToEndTest {
  private static final int PASSES = 2;

  @TempDir Path dir;

  /** One job-wide id read from etcd: its head and each shard's file. */
  private record Cut(JobCheckpoint head, Map<Integer, CheckpointMeta> shards) {
    boolean complete() {
      for (int i = 0; i < head.getShards(); i++) {
        CheckpointMeta m = shards.get(i);
        if (m == null || m.getStep() != head.getStep()) {
          return false;
        }
      }
      return true;
    }
  }

  private static Optional<Cut> newestComplete(EtcdCoordinator etcd) throws Exception {
    String prefix = etcd.keys().jobCheckpointPrefix();
    Map<Long, JobCheckpoint> heads = new TreeMap<>();
    Map<Long, Map<Integer, CheckpointMeta>> shards = new HashMap<>();
    for (KeyValueStore.KeyValue k : etcd.kv().getPrefix(prefix)) {
      String rest = k.key().substring(prefix.length());
      int slash = rest.indexOf('/');
      if (slash < 0) {
        heads.put(Long.parseLong(rest), JobCheckpoint.parseFrom(k.value()));
      } else {
        shards
            .computeIfAbsent(Long.parseLong(rest.substring(0, slash)), id -> new HashMap<>())
            .put(
                Integer.parseInt(rest.substring(rest.lastIndexOf('/') + 1)),
                CheckpointMeta.parseFrom(k.value()));
      }
    }
    Cut newest = null;
    for (Map.Entry<Long, JobCheckpoint> h : heads.entrySet()) {
      Cut c = new Cut(h.getValue(), shards.getOrDefault(h.getKey(), Map.of()));
      if (c.complete()) {
        newest = c;
      }
    }
    return Optional.ofNullable(newest);
  }

  /** Every dense block's values, by "name/block". */
  private static Map<String, float[]> fileValues(CheckpointMeta meta) throws Exception {
    ShardCheckpoint cp = ShardCheckpoint.parseFrom(Files.readAllBytes(Path.of(meta.getPath())));
    Map<String, float[]> out = new TreeMap<>();
    for (BlockCheckpoint b : cp.getBlocksList()) {
      out.put(b.getName() + "/" + b.getBlock(), TensorCodec.decode(b.getValues()));
    }
    return out;
  }

  private static Map<String, float[]> pulled(int grpcPort) throws Exception {
    ManagedChannel channel = Channels.forAddress("127.0.0.1:" + grpcPort);
    try {
      PullParametersResponse r =
          ParameterServerGrpc.newBlockingStub(channel)
              .withDeadlineAfter(30, TimeUnit.SECONDS)
              .pullParameters(PullParametersRequest.getDefaultInstance());
      Map<String, float[]> out = new TreeMap<>();
      for (TensorBlock b : r.getBlocksList()) {
        out.put(b.getName() + "/" + b.getBlock(), TensorCodec.decode(b.getData(), b.getDtype()));
      }
      return out;
    } finally {
      Channels.close(channel);
    }
  }

  @Test
  void syncJob_cutsJobWideCheckpoints_andARestartOfAllPserversRestoresOne() throws Exception {
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder().train(6000).test(1000).shards(2).build());
    ClusterSpec spec =
        Jobs.spec(dir.resolve("run"))
            .job("job-ckpt")
            .masters(1)
            .pservers(2)
            .trainers(2)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "1s")
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-consistency", "job")
            .property(
                Role.TRAINER,
                "paramserver.trainer.train-data",
                dir.resolve("data") + "/train-*.recordio")
            .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
            .property(Role.TRAINER, "paramserver.trainer.sync", "true")
            .build();
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      try (EtcdCoordinator etcd =
          EtcdCoordinator.connect(EtcdSettings.of(cluster.etcdEndpoint(), "job-ckpt"))) {
        run(cluster, etcd);
      }
    }
  }

  private void run(LocalCluster cluster, EtcdCoordinator etcd) throws Exception {
    JobStatusView end =
        cluster.awaitJob(
            s ->
                s.isFailed()
                    || s.isFinished()
                        && s.passes().size() == PASSES
                        && s.passes().get(PASSES - 1).evalReports() >= 1,
            Duration.ofMinutes(6));
    assertThat(end.state()).as("job (%s)", end.failureReason()).isEqualTo("FINISHED");
    // the trainers exit at the job's end: the job is no longer running
    Poll.until(
        Duration.ofMinutes(1),
        () -> etcd.kv().getPrefix(etcd.keys().trainersPrefix()).isEmpty(),
        "every trainer gone from etcd");

    Cut cut = newestComplete(etcd).orElseThrow(() -> new AssertionError("no complete job id"));
    long s = cut.head().getStep();
    assertThat(cut.shards()).containsOnlyKeys(0, 1);
    Map<Integer, Map<String, float[]>> files = new HashMap<>();
    for (int i = 0; i < 2; i++) {
      CheckpointMeta m = cut.shards().get(i);
      assertThat(ShardCheckpoint.parseFrom(Files.readAllBytes(Path.of(m.getPath()))).getStep())
          .as("step in the file of shard %d", i)
          .isEqualTo(s);
      files.put(i, fileValues(m));
    }
    long[] before = new long[2];
    for (int p = 0; p < 2; p++) {
      JsonNode st = cluster.adminStatus(Role.PSERVER, p);
      before[st.path("index").asInt()] = st.path("step").asLong();
    }
    // usually the shards trained past the newest cut, so the restart goes back to it; a cut
    // proposed just before the job's last step is cut at that step, and the restart then restores
    // the last step (still from the job-wide files, checked below)
    assertThat(before[0]).as("shard 0's step against the cut").isGreaterThanOrEqualTo(s);
    assertThat(before[1]).isEqualTo(before[0]);

    // the job (all its pservers) restarts
    cluster.stop(Role.PSERVER, 0);
    cluster.stop(Role.PSERVER, 1);
    cluster.restart(Role.PSERVER, 0);
    cluster.restart(Role.PSERVER, 1);
    for (int p = 0; p < 2; p++) {
      cluster.awaitReady(Role.PSERVER, p, Duration.ofMinutes(3));
    }

    for (int p = 0; p < 2; p++) {
      JsonNode st = cluster.adminStatus(Role.PSERVER, p);
      int index = st.path("index").asInt();
      assertThat(st.path("step").asLong()).as("step of restored shard %d", index).isEqualTo(s);
      Map<String, float[]> served = pulled(cluster.process(Role.PSERVER, p).grpcPort());
      assertThat(served.keySet()).isEqualTo(files.get(index).keySet());
      for (String block : served.keySet()) {
        assertThat(served.get(block))
            .as("block %s of shard %d vs its job-wide file", block, index)
            .containsExactly(files.get(index).get(block));
      }
    }
    System.out.printf(
        "JOB-CHECKPOINT id %d at step %d restored on both shards (they had reached %d)%n",
        cut.head().getId(), s, before[0]);
  }
}
