package dev.paramserver.master.console;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The job as {@code /admin/job} shows it, built from successive samples of the job's status, the
 * pservers and the trainers: rates from the counts' differences, the curves over time, the training
 * loss of each pass, the flags (a hot pserver pushes more than twice the median rate of the others;
 * a straggler trains fewer than half the median samples per second of the others; a pserver that
 * does not answer is down, one whose registration is gone is LOST until it is back) and the events
 * found by comparing a sample with the one before (pserver restarts and re-initialisations,
 * trainers coming and going, passes, the job's end). Plain logic, no network: {@link JobConsole}
 * feeds it. Thread-safe.
 */
final class ConsoleModel {
  static final double HOT_FACTOR = 2.0;
  static final double STRAGGLER_FACTOR = 0.5;
  static final double RATE_SMOOTHING = 0.5;

  private final int historySize;
  private final JobEvents events;
  private final Deque<Point> history = new ArrayDeque<>();
  private final Map<Integer, PserverSample> lastPservers = new HashMap<>();
  private final Map<Integer, double[]> pserverRates = new HashMap<>();
  private final Set<Integer> lost = new TreeSet<>();
  private final Map<Integer, String> initIds = new HashMap<>();
  private final Map<String, Long> trainerLastReport = new HashMap<>();
  private final Map<String, long[]> trainerSamples = new HashMap<>();
  private final Map<String, Double> trainerRates = new HashMap<>();
  private final Map<Integer, double[]> passLoss = new HashMap<>();
  private JobStatus lastJob;
  private long lastTimeMs;
  private long lastRecords = -1;
  private double recordsPerSecond;
  private JobView view = JobView.unsampled(List.of());

  /** One point of the curves over time. */
  private record Point(
      long timeMs, int pass, double recordsPerSecond, double samplesPerSecond, Double trainLoss) {}

  ConsoleModel(int historySize, JobEvents events) {
    this.historySize = historySize;
    this.events = events;
  }

  /** Takes one sample (taken at {@code nowMs}) and rebuilds the view, without a scaling. */
  void update(
      long nowMs, JobStatus job, List<PserverSample> pservers, List<TrainerSample> trainers) {
    update(nowMs, job, pservers, trainers, null);
  }

  /**
   * Takes one sample (taken at {@code nowMs}) and rebuilds the view; {@code scaling} is the
   * placement as it is now (null: not known, the view leaves it out).
   */
  void update(
      long nowMs,
      JobStatus job,
      List<PserverSample> pservers,
      List<TrainerSample> trainers,
      JobView.Scaling scaling) {
    update(nowMs, job, pservers, trainers, scaling, null);
  }

  /**
   * Takes one sample and rebuilds the view, with the serving replicas as they are now ({@code
   * serving}; null: not known, the view leaves it out).
   */
  synchronized void update(
      long nowMs,
      JobStatus job,
      List<PserverSample> pservers,
      List<TrainerSample> trainers,
      JobView.Scaling scaling,
      List<JobView.Serving> serving) {
    double dt = lastTimeMs == 0 ? 0 : (nowMs - lastTimeMs) / 1000.0;
    jobEvents(nowMs, job);
    long records = job.getPassesList().stream().mapToLong(PassStatus::getRecords).sum();
    if (lastRecords >= 0 && dt > 0) {
      recordsPerSecond = Math.max(0, records - lastRecords) / dt;
    }
    lastRecords = records;
    List<JobView.Pserver> ps = pservers(nowMs, dt, pservers);
    List<JobView.Trainer> tr = trainers(nowMs, job, trainers);
    double samplesPerSecond =
        trainers.stream()
            .filter(TrainerSample::reachable)
            .mapToDouble(t -> trainerRates.getOrDefault(t.id(), 0.0))
            .sum();
    Double trainLoss = meanLoss(trainers);
    if (job.getState() == JobState.RUNNING || history.isEmpty()) {
      history.addLast(
          new Point(nowMs, job.getPass(), recordsPerSecond, samplesPerSecond, trainLoss));
      while (history.size() > historySize) {
        history.removeFirst();
      }
    }
    view =
        new JobView(
            nowMs,
            true,
            job(nowMs, job, samplesPerSecond),
            passes(job),
            series(),
            ps,
            tr,
            List.of(),
            scaling,
            null,
            serving);
    lastJob = job;
    lastTimeMs = nowMs;
  }

  /** The view of the last sample, with the events as they are now. */
  synchronized JobView view() {
    return view.withEvents(events.list());
  }

  private void jobEvents(long now, JobStatus job) {
    if (lastJob == null) {
      return;
    }
    if (job.getState() == JobState.RUNNING && job.getPass() != lastJob.getPass()) {
      events.add(
          now, "pass", "pass " + (job.getPass() + 1) + " of " + job.getTotalPasses() + " started");
    }
    if (job.getState() != lastJob.getState()) {
      switch (job.getState()) {
        case FINISHED -> events.add(now, "job", "the job finished");
        case FAILED -> events.add(now, "job", "the job failed: " + job.getFailureReason());
        case RUNNING -> events.add(now, "job", "the job is running");
        default -> {}
      }
    }
  }

  private List<JobView.Pserver> pservers(long now, double dt, List<PserverSample> samples) {
    Map<Integer, PserverSample> seen = new TreeMap<>();
    for (PserverSample s : samples) {
      seen.put(s.index(), s);
      PserverSample prev = lastPservers.get(s.index());
      if (prev != null && prev.registration() != s.registration()) {
        events.add(
            now,
            "pserver-restart",
            "pserver " + s.index() + " registered again at " + s.address() + " (restarted)");
        if (s.initId().isEmpty() && "UNINITIALISED".equals(s.state())) {
          events.add(
              now,
              "pserver-reinit",
              "pserver " + s.index() + " came back without parameters: it needs re-initialising");
        }
      } else if (prev == null && lastTimeMs != 0) {
        events.add(
            now, "pserver-restart", "pserver " + s.index() + " registered at " + s.address());
      }
      String initialised = initIds.get(s.index());
      if (!s.initId().isEmpty() && initialised != null && !s.initId().equals(initialised)) {
        events.add(now, "pserver-reinit", "pserver " + s.index() + " was initialised again");
      }
      if (!s.initId().isEmpty()) {
        initIds.put(s.index(), s.initId());
      }
      double[] rate = pserverRates.computeIfAbsent(s.index(), i -> new double[2]);
      if (prev != null && dt > 0 && s.error().isEmpty() && prev.error().isEmpty()) {
        // a restarted pserver counts from 0 again
        rate[0] = (s.pushes() >= prev.pushes() ? s.pushes() - prev.pushes() : s.pushes()) / dt;
        rate[1] = (s.pulls() >= prev.pulls() ? s.pulls() - prev.pulls() : s.pulls()) / dt;
      } else if (!s.error().isEmpty()) {
        rate[0] = 0;
        rate[1] = 0;
      }
      lost.remove(s.index());
      lastPservers.put(s.index(), s);
    }
    for (Map.Entry<Integer, PserverSample> e : lastPservers.entrySet()) {
      if (!seen.containsKey(e.getKey()) && lost.add(e.getKey())) {
        events.add(
            now,
            "pserver-lost",
            "pserver " + e.getKey() + " lost its registration (stopped, or its lease expired)");
      }
    }
    Map<Integer, PserverSample> rows = new TreeMap<>(seen);
    for (int i : lost) {
      PserverSample was = lastPservers.get(i);
      rows.put(
          i,
          PserverSample.unreachable(
              i, was.address(), was.registration(), was.adminAddress(), "not registered in etcd"));
      pserverRates.computeIfAbsent(i, k -> new double[2])[0] = 0;
    }
    List<JobView.Pserver> out = new ArrayList<>();
    for (PserverSample s : rows.values()) {
      double[] rate = pserverRates.computeIfAbsent(s.index(), k -> new double[2]);
      List<Double> others = new ArrayList<>();
      for (PserverSample o : rows.values()) {
        if (o.index() != s.index()) {
          others.add(pserverRates.get(o.index())[0]);
        }
      }
      double median = median(others);
      out.add(
          new JobView.Pserver(
              s.index(),
              s.address(),
              s.adminAddress(),
              lost.contains(s.index()) ? "LOST" : s.state(),
              s.step(),
              s.parameterBytes(),
              s.sparseRows(),
              round(rate[0]),
              round(rate[1]),
              s.applyP99Ms(),
              s.checkpointMs() > 0 ? round(Math.max(0, now - s.checkpointMs()) / 1000.0) : null,
              null,
              !others.isEmpty() && median > 0 && rate[0] > HOT_FACTOR * median,
              !s.error().isEmpty(),
              s.error()));
    }
    return out;
  }

  private List<JobView.Trainer> trainers(long now, JobStatus job, List<TrainerSample> samples) {
    Map<String, Long> before = new HashMap<>(trainerLastReport);
    for (TrainerSample t : samples) {
      if (!before.containsKey(t.id()) && lastTimeMs != 0) {
        events.add(now, "trainer-joined", "trainer '" + t.id() + "' joined");
      }
      if (t.reachable()) {
        trainerLastReport.put(t.id(), now);
        trainerRates.put(t.id(), rate(t, now));
        if (t.loss() != null && Double.isFinite(t.loss())) {
          double[] acc = passLoss.computeIfAbsent(t.pass(), p -> new double[2]);
          acc[0] += t.loss();
          acc[1]++;
        }
      } else {
        trainerLastReport.putIfAbsent(t.id(), 0L);
      }
    }
    for (String id : before.keySet()) {
      if (samples.stream().noneMatch(t -> t.id().equals(id))) {
        trainerLastReport.remove(id);
        trainerRates.remove(id);
        trainerSamples.remove(id);
        events.add(now, "trainer-left", "trainer '" + id + "' left");
      }
    }
    List<JobView.Trainer> out = new ArrayList<>();
    for (TrainerSample t : samples) {
      List<Double> others = new ArrayList<>();
      for (TrainerSample o : samples) {
        if (o != t && o.reportsStatus()) {
          others.add(trainerRates.getOrDefault(o.id(), 0.0));
        }
      }
      double median = median(others);
      long last = trainerLastReport.getOrDefault(t.id(), 0L);
      double rate = t.reachable() ? trainerRates.getOrDefault(t.id(), 0.0) : 0.0;
      out.add(
          new JobView.Trainer(
              t.id(),
              t.adminAddress(),
              t.state(),
              t.pass(),
              t.task() < 0 ? null : t.task(),
              t.samples(),
              t.tasksDone() < 0 ? null : t.tasksDone(),
              round(rate),
              t.loss(),
              last == 0 ? null : last,
              last == 0 ? null : round((now - last) / 1000.0),
              t.pass() < 0 ? null : Math.max(0, job.getPass() - t.pass()),
              t.reportsStatus()
                  && !others.isEmpty()
                  && median > 0
                  && rate < STRAGGLER_FACTOR * median,
              t.error()));
    }
    return out;
  }

  /**
   * A trainer's samples per second from its sample counter between two looks (smoothed), so a
   * trainer that stopped making progress shows 0 whatever rate it last reported; its own reported
   * rate until there are two looks.
   */
  private double rate(TrainerSample t, long now) {
    long[] prev = trainerSamples.put(t.id(), new long[] {t.samples(), now});
    if (prev == null || now <= prev[1] || t.samples() < prev[0]) {
      return t.samplesPerSecond();
    }
    double measured = (t.samples() - prev[0]) * 1000.0 / (now - prev[1]);
    Double before = trainerRates.get(t.id());
    return before == null ? measured : RATE_SMOOTHING * measured + (1 - RATE_SMOOTHING) * before;
  }

  private JobView.Job job(long now, JobStatus job, double samplesPerSecond) {
    TaskCounts t = job.getTasks();
    long started = job.getPassesCount() == 0 ? 0 : job.getPasses(0).getStartedMs();
    long ended =
        job.getState() == JobState.RUNNING || job.getPassesCount() == 0
            ? 0
            : job.getPasses(job.getPassesCount() - 1).getEndedMs();
    double elapsed = started == 0 ? 0 : Math.max(0, (ended > 0 ? ended : now) - started) / 1000.0;
    double progress = progress(job);
    return new JobView.Job(
        job.getState().name(),
        job.getFailureReason(),
        job.getMasterId(),
        job.getAdminAddress(),
        job.getPass(),
        job.getTotalPasses(),
        new JobView.Tasks(t.getTodo(), t.getPending(), t.getDone(), t.getFailed()),
        job.getDatasetTasks(),
        job.getDatasetRecords(),
        started == 0 ? null : started,
        round(elapsed),
        round(progress),
        job.getState() == JobState.RUNNING && progress > 0 && elapsed > 0
            ? round(elapsed * (1 - progress) / progress)
            : null,
        round(recordsPerSecond),
        round(samplesPerSecond));
  }

  /** Fraction of the job done: finished passes plus the done share of the current pass. */
  static double progress(JobStatus job) {
    if (job.getState() == JobState.FINISHED) {
      return 1.0;
    }
    if (job.getTotalPasses() == 0 || job.getDatasetTasks() == 0) {
      return 0.0;
    }
    double current = (double) job.getTasks().getDone() / job.getDatasetTasks();
    return Math.min(1.0, (job.getPass() + current) / job.getTotalPasses());
  }

  private List<JobView.Pass> passes(JobStatus job) {
    List<JobView.Pass> out = new ArrayList<>();
    for (PassStatus p : job.getPassesList()) {
      double[] loss = passLoss.get(p.getPass());
      boolean evaluated = p.getEvalReports() > 0;
      out.add(
          new JobView.Pass(
              p.getPass(),
              p.getStartedMs(),
              p.getEndedMs() == 0 ? null : p.getEndedMs(),
              p.getRecords(),
              p.getDuplicates(),
              p.getTimeouts(),
              loss == null || loss[1] == 0 ? null : loss[0] / loss[1],
              evaluated ? p.getEvalLoss() : null,
              evaluated ? p.getEvalAccuracy() : null,
              evaluated && Double.isFinite(p.getEvalAuc()) && p.getEvalAuc() > 0
                  ? p.getEvalAuc()
                  : null));
    }
    return out;
  }

  /** The curves over time, column by column (the shape charting libraries take). */
  private JobView.Series series() {
    List<Double> time = new ArrayList<>();
    List<Integer> pass = new ArrayList<>();
    List<Double> records = new ArrayList<>();
    List<Double> samples = new ArrayList<>();
    List<Double> loss = new ArrayList<>();
    for (Point p : history) {
      time.add(p.timeMs() / 1000.0);
      pass.add(p.pass());
      records.add(round(p.recordsPerSecond()));
      samples.add(round(p.samplesPerSecond()));
      loss.add(p.trainLoss());
    }
    return new JobView.Series(time, pass, records, samples, loss);
  }

  private static Double meanLoss(List<TrainerSample> trainers) {
    double sum = 0;
    int n = 0;
    for (TrainerSample t : trainers) {
      if (t.reachable() && t.loss() != null && Double.isFinite(t.loss())) {
        sum += t.loss();
        n++;
      }
    }
    return n == 0 ? null : sum / n;
  }

  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return 0;
    }
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(Double::compare);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static double round(double v) {
    return Double.isFinite(v) ? Math.round(v * 1000.0) / 1000.0 : 0.0;
  }
}
