package dev.paramserver.it;

import static dev.paramserver.it.ScriptedPushes.PARTS;
import static dev.paramserver.it.ScriptedPushes.push;
import static dev.paramserver.it.ScriptedPushes.subtract;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.EtcdExtension;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exactly once, against a real pserver process: a scripted client pushes a known sequence of
 * small-integer gradients (exact in float32) under SGD with learning rate 1; the pserver is killed
 * with SIGKILL ({@code kill -9}) at a random push, 20 times, and restarted on the same checkpoint
 * directory; the client retries every unacknowledged push with its identity. At the end the pulled
 * parameters must equal {@code init - sum of all gradients}, bit for bit: nothing acknowledged was
 * lost, nothing was applied twice. A restart costs a JVM start (about 5 s on a quiet 2-core
 * machine, far more under load), so the test takes about three minutes. Each step is cut into parts
 * sent concurrently, so a kill finds some applied and some not; the pserver checkpoints every
 * second, so kills also land during and between checkpoints and the log is replayed over different
 * checkpoints.
 */
@Timeout(900)
class ExactlyOnceKillTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  /** Kill points; {@code -Dexactly.kills=N} changes it for a quicker local run. */
  private static final int KILLS = Integer.getInteger("exactly.kills", 20);

  @TempDir Path dir;

  private ServiceRun pserver;
  private ManagedChannel channel;
  private ParameterServerGrpc.ParameterServerFutureStub stub;
  private int duplicates;

  private ServiceRun startPserver(String job, int run) throws IOException, InterruptedException {
    ServiceRun ps =
        ServiceRun.start(
            Role.PSERVER,
            dir.resolve("logs/pserver-" + run + ".log"),
            Map.of(
                "paramserver.job", job,
                "paramserver.etcd.endpoints", etcd.endpoint(),
                "paramserver.etcd.lease-ttl", "2s",
                "paramserver.pserver.desired", "1",
                "paramserver.pserver.index", "0",
                "paramserver.pserver.checkpoint-dir", dir.resolve("checkpoints").toString(),
                "paramserver.pserver.checkpoint-interval", "1s"));
    ps.awaitGrpcListening(Duration.ofSeconds(120));
    Channels.close(channel);
    channel = Channels.forAddress("127.0.0.1:" + ps.grpcPort);
    stub = ParameterServerGrpc.newFutureStub(channel);
    return ps;
  }

  private <T> T await(Future<T> f) throws ExecutionException, InterruptedException {
    return ScriptedPushes.await(f, 10);
  }

  /** Sends {@code request} until it is acknowledged (the pserver may be restarting). */
  private PushGradientsResponse pushUntilAcknowledged(PushGradientsRequest request)
      throws InterruptedException {
    PushGradientsResponse r = ScriptedPushes.pushUntilAcknowledged(stub, request, pserver.log);
    if (r.getDuplicate()) {
      duplicates++;
    }
    return r;
  }

  private void initialise(float[] init) throws InterruptedException {
    InitParametersRequest req = ScriptedPushes.init(init);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (true) {
      try {
        await(stub.withDeadlineAfter(10, TimeUnit.SECONDS).initParameters(req));
        await(stub.withDeadlineAfter(10, TimeUnit.SECONDS).finishInit(ScriptedPushes.finishInit()));
        return;
      } catch (ExecutionException e) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("pserver was not initialised; see " + pserver.log, e);
        }
        Thread.sleep(100);
      }
    }
  }

  private float[] pull() throws Exception {
    PullParametersResponse r =
        await(
            stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .pullParameters(PullParametersRequest.getDefaultInstance()));
    return ScriptedPushes.values(r);
  }

  @Test
  void killNineAtRandomPushes_pulledValuesAreInitMinusEveryAcknowledgedGradient_bitForBit()
      throws Exception {
    long seed = Long.getLong("exactly.seed", System.nanoTime());
    Random random = new Random(seed);
    String job = etcd.uniqueJob();
    float[] expected = ScriptedPushes.initial();
    List<Double> restartSeconds = new ArrayList<>();
    long step = 0;
    long pushes = 0;
    int run = 0;
    // 21 pserver starts: each from the class-data archive, about twice as fast as the fat jar
    ServiceRun.prepareClassData(Role.PSERVER, dir.resolve("class-data"));
    try {
      pserver = startPserver(job, run);
      initialise(expected.clone());
      for (int kill = 0; kill < KILLS; kill++) {
        int whole = 2 + random.nextInt(20);
        for (int s = 0; s < whole; s++) {
          step++;
          List<Future<PushGradientsResponse>> sent = new ArrayList<>();
          for (int p = 0; p < PARTS; p++) {
            sent.add(stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(step, p)));
          }
          for (int p = 0; p < PARTS; p++) {
            assertThat(await(sent.get(p)).getDuplicate()).isFalse();
            subtract(expected, step, p);
            pushes++;
          }
        }
        // The kill: the parts of this step are in flight; some are applied, some not.
        step++;
        List<Future<PushGradientsResponse>> inFlight = new ArrayList<>();
        for (int p = 0; p < PARTS; p++) {
          inFlight.add(stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(step, p)));
        }
        long delayMicros = random.nextInt(3000);
        TimeUnit.MICROSECONDS.sleep(delayMicros);
        long killedAt = System.nanoTime();
        pserver.process.destroyForcibly(); // SIGKILL
        assertThat(pserver.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
        boolean[] acknowledged = new boolean[PARTS];
        for (int p = 0; p < PARTS; p++) {
          try {
            await(inFlight.get(p));
            acknowledged[p] = true;
          } catch (ExecutionException e) {
            acknowledged[p] = false;
          }
        }
        pserver = startPserver(job, ++run);
        boolean first = true;
        for (int p = 0; p < PARTS; p++) {
          if (!acknowledged[p]) {
            pushUntilAcknowledged(push(step, p));
            if (first) {
              restartSeconds.add((System.nanoTime() - killedAt) / 1e9);
              first = false;
            }
          }
          subtract(expected, step, p);
          pushes++;
        }
        if (first) {
          // every part was acknowledged before the kill: an acknowledged push retried late is a
          // duplicate, and the time to recover is that of its answer
          assertThat(pushUntilAcknowledged(push(step, PARTS - 1)).getDuplicate())
              .as("a push acknowledged before the kill, sent again after the restart")
              .isTrue();
          restartSeconds.add((System.nanoTime() - killedAt) / 1e9);
        }
      }
      float[] pulled = pull();
      restartSeconds.sort(null);
      String report =
          String.format(
              Locale.ROOT,
              "EXACTLY-ONCE kills=%d pushes=%d duplicates=%d restart(kill->first ack) median=%.1fs"
                  + " max=%.1fs seed=%d",
              KILLS,
              pushes,
              duplicates,
              restartSeconds.get(restartSeconds.size() / 2),
              restartSeconds.get(restartSeconds.size() - 1),
              seed);
      ScriptedPushes.reportAndCheck(report, "exactly-once-report.txt", pulled, expected, seed, dir);
    } finally {
      Channels.close(channel);
      if (pserver != null) {
        pserver.close();
      }
    }
  }
}
