package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.AppliedPushes;
import dev.paramserver.proto.v1.PushGradientsRequest;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Per trainer run (trainer id, session): the highest step a shard applied and which parts of it.
 * Decides whether a push is a duplicate (see {@code ParameterServer.PushGradients}). A push is
 * checked and recorded while its run's {@link Run} monitor is held, so two copies of one push in
 * flight at once apply once.
 */
final class AppliedSteps {
  private final Map<String, Run> runs = new ConcurrentHashMap<>();

  /** One trainer run's record; synchronise on it to check, apply and record a push atomically. */
  static final class Run {
    final String trainerId;
    final String session;
    private long step;
    private final BitSet parts = new BitSet();

    private Run(String trainerId, String session) {
      this.trainerId = trainerId;
      this.session = session;
    }

    /** True if push (step, part) of this run was applied already. */
    boolean applied(long pushStep, int part) {
      return pushStep < step || (pushStep == step && parts.get(part));
    }

    void record(long pushStep, int part) {
      if (pushStep > step) {
        step = pushStep;
        parts.clear();
      }
      if (pushStep == step) {
        parts.set(part);
      }
    }
  }

  /** True when {@code request} carries an identity (step > 0). */
  static boolean identified(PushGradientsRequest request) {
    return request.getStep() > 0;
  }

  /** The record of the request's run (created empty). */
  Run run(PushGradientsRequest request) {
    return runs.computeIfAbsent(
        key(request.getTrainerId(), request.getSession()),
        k -> new Run(request.getTrainerId(), request.getSession()));
  }

  /** True if {@code request} (identified) was applied already; records nothing. */
  boolean applied(PushGradientsRequest request) {
    // a lookup, not run(): a push refused after this check must leave no record of its run
    Run r = runs.get(key(request.getTrainerId(), request.getSession()));
    if (r == null) {
      return false;
    }
    synchronized (r) {
      return r.applied(request.getStep(), request.getPart());
    }
  }

  /** Records {@code request} (identified or not) as applied. */
  void record(PushGradientsRequest request) {
    if (!identified(request)) {
      return;
    }
    Run r = run(request);
    synchronized (r) {
      r.record(request.getStep(), request.getPart());
    }
  }

  private static String key(String trainerId, String session) {
    return trainerId + '\u0000' + session;
  }

  /** The records as checkpoint entries, sorted by trainer and session. */
  List<AppliedPushes> toProto() {
    List<AppliedPushes> out = new ArrayList<>();
    for (Run r : runs.values()) {
      synchronized (r) {
        AppliedPushes.Builder b =
            AppliedPushes.newBuilder()
                .setTrainerId(r.trainerId)
                .setSession(r.session)
                .setStep(r.step);
        r.parts.stream().forEach(b::addParts);
        out.add(b.build());
      }
    }
    out.sort(
        Comparator.comparing(AppliedPushes::getTrainerId).thenComparing(AppliedPushes::getSession));
    return out;
  }

  /** Replaces the records with a checkpoint's. */
  void restore(List<AppliedPushes> entries) {
    runs.clear();
    for (AppliedPushes e : entries) {
      Run r = new Run(e.getTrainerId(), e.getSession());
      r.step = e.getStep();
      e.getPartsList().forEach(p -> r.parts.set(p));
      runs.put(key(e.getTrainerId(), e.getSession()), r);
    }
  }

  void clear() {
    runs.clear();
  }
}
