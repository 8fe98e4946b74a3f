package dev.paramserver.pserver.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** The preStop decision: a scale-down (replicas at or below the ordinal) scales; else nothing. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class PreStopHookTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A master whose placement follows the scale after {@code emptiedAfter} looks at it. */
  static final class Master implements JobScaler {
    final List<String> calls = new CopyOnWriteArrayList<>();
    volatile int desired;
    volatile int pservers;
    volatile int emptiedAfter;
    volatile IOException refusal;

    Master(int pservers) {
      this.desired = pservers;
      this.pservers = pservers;
    }

    @Override
    public void scale(int n) throws IOException {
      calls.add("scale " + n);
      if (refusal != null) {
        throw refusal;
      }
      desired = n;
    }

    @Override
    public void growTo(int n) {
      calls.add("growTo " + n);
    }

    @Override
    public JsonNode scaling() {
      calls.add("scaling");
      if (desired < pservers && emptiedAfter-- <= 0) {
        pservers = desired;
      }
      return JSON.createObjectNode().put("pservers", pservers).put("desired", desired);
    }
  }

  private static PreStopHook hook(int replicas, Master master, int ordinal, Duration timeout) {
    return new PreStopHook(
        () -> replicas, master, ordinal, timeout, Duration.ofMillis(300), Duration.ofMillis(20));
  }

  @Test
  void replicasAboveTheOrdinal_isARestart_andNothingIsAsked() throws Exception {
    Master master = new Master(3);

    PreStopHook.Outcome o = hook(3, master, 2, Duration.ofSeconds(5)).preStop();

    assertThat(o.action()).isEqualTo("none");
    assertThat(o.message()).contains("a restart");
    assertThat(master.calls).isEmpty();
  }

  @Test
  void replicasAtOrBelowTheOrdinal_scalesTheJob_andWaitsUntilThisPserverIsEmpty() throws Exception {
    Master master = new Master(3);
    master.emptiedAfter = 3;

    PreStopHook.Outcome o = hook(2, master, 2, Duration.ofSeconds(5)).preStop();

    assertThat(o.action()).isEqualTo("emptied");
    assertThat(master.calls).contains("scale 2").doesNotContain("growTo 2");
    assertThat(master.calls.stream().filter("scaling"::equals).count()).isGreaterThan(3);
    assertThat(master.pservers).isEqualTo(2);
  }

  @Test
  void theMastersShutdown_endsTheWait() throws Exception {
    Master master = new Master(4);
    master.emptiedAfter = Integer.MAX_VALUE; // never seen empty: the shutdown ends it
    PreStopHook hook = hook(2, master, 3, Duration.ofSeconds(10));

    CompletableFuture<PreStopHook.Outcome> o =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return hook.preStop();
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    Thread.sleep(200);
    assertThat(o).isNotDone();
    hook.shutdownStarted();

    assertThat(o.get(2, TimeUnit.SECONDS).action()).isEqualTo("shutdown");
    assertThat(master.calls).contains("scale 2");
  }

  @Test
  void aJobAlreadyAskedForThatFew_isNotScaledAgain_norRaised() throws Exception {
    Master master = new Master(3);
    master.desired = 1; // psctl scale (or another leaving pod) asked for fewer already

    PreStopHook.Outcome o = hook(2, master, 2, Duration.ofSeconds(5)).preStop();

    assertThat(o.action()).isEqualTo("emptied");
    assertThat(master.calls).doesNotContain("scale 2");
    assertThat(master.desired).isEqualTo(1);
  }

  @Test
  void scaledToZero_theWholeJobStops_andNothingIsAsked() throws Exception {
    Master master = new Master(2);

    PreStopHook.Outcome o = hook(0, master, 0, Duration.ofSeconds(5)).preStop();

    assertThat(o.action()).isEqualTo("none");
    assertThat(master.calls).isEmpty();
  }

  @Test
  void aPermanentRefusal_endsAtOnce_withTheMastersReason() throws Exception {
    Master master = new Master(3);
    master.refusal =
        new IOException(
            "POST http://m/admin/job/scale?pservers=2 answered 409: the job trains in SYNC mode:"
                + " only asynchronous jobs can be scaled live");

    long start = System.nanoTime();
    PreStopHook.Outcome o = hook(2, master, 2, Duration.ofSeconds(10)).preStop();

    assertThat(o.action()).isEqualTo("error");
    assertThat(o.message()).contains("only asynchronous");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
  }

  @Test
  void aTransientRefusal_isAskedAgain() throws Exception {
    Master master = new Master(3);
    master.refusal = new IOException("cannot connect to the leader master at x (is it running?)");
    PreStopHook hook = hook(2, master, 2, Duration.ofSeconds(5));
    CompletableFuture.runAsync(
        () -> {
          while (master.calls.stream().filter("scale 2"::equals).count() < 3) {
            Thread.onSpinWait();
          }
          master.refusal = null;
        });

    assertThat(hook.preStop().action()).isEqualTo("emptied");
    assertThat(master.calls.stream().filter("scale 2"::equals).count()).isGreaterThan(2);
  }

  @Test
  void aPserverNeverEmptied_givesUpAtTheTimeout() throws Exception {
    Master master = new Master(3);
    master.emptiedAfter = Integer.MAX_VALUE;

    long start = System.nanoTime();
    PreStopHook.Outcome o = hook(2, master, 2, Duration.ofMillis(500)).preStop();

    assertThat(o.action()).isEqualTo("timeout");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
  }

  @Test
  void unreadableReplicas_doNothing_andSayWhy() throws Exception {
    Master master = new Master(3);
    PreStopHook hook =
        new PreStopHook(
            () -> {
              throw new IllegalStateException("statefulset ns/x does not exist");
            },
            master,
            2,
            Duration.ofSeconds(10),
            Duration.ofMillis(100),
            Duration.ofMillis(20));

    PreStopHook.Outcome o = hook.preStop();

    assertThat(o.action()).isEqualTo("error");
    assertThat(o.message()).contains("does not exist");
    assertThat(master.calls).isEmpty();
  }
}
