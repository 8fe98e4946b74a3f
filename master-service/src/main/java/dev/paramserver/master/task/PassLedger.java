package dev.paramserver.master.task;

import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/** The accounting of one pass: records, duplicates, trainers, timeouts and evaluations. */
final class PassLedger {
  final int pass;
  long startedMs;
  long endedMs;
  long records;
  int duplicates;
  int timeouts;
  final Set<String> trainers = new LinkedHashSet<>();
  // one evaluation per trainer (the latest); evaluations restored from a snapshot have no trainer
  // names any more and are kept as a count and sums
  final Map<String, Evaluation> evaluations = new LinkedHashMap<>();
  int restoredEvalCount;
  double restoredLossSum;
  double restoredAccuracySum;
  double restoredAucSum;
  int restoredAucCount;
  // counts frozen when the pass ended (null while it runs)
  TaskCounts finalCounts;

  record Evaluation(double loss, double accuracy, double auc) {}

  PassLedger(int pass, long startedMs) {
    this.pass = pass;
    this.startedMs = startedMs;
  }

  PassLedger copy() {
    PassLedger c = new PassLedger(pass, startedMs);
    c.endedMs = endedMs;
    c.records = records;
    c.duplicates = duplicates;
    c.timeouts = timeouts;
    c.trainers.addAll(trainers);
    c.evaluations.putAll(evaluations);
    c.restoredEvalCount = restoredEvalCount;
    c.restoredLossSum = restoredLossSum;
    c.restoredAccuracySum = restoredAccuracySum;
    c.restoredAucSum = restoredAucSum;
    c.restoredAucCount = restoredAucCount;
    c.finalCounts = finalCounts;
    return c;
  }

  PassStatus toProto(TaskCounts liveCounts) {
    int count = restoredEvalCount + evaluations.size();
    double loss = restoredLossSum;
    double accuracy = restoredAccuracySum;
    double auc = restoredAucSum;
    int aucCount = restoredAucCount;
    for (Evaluation e : evaluations.values()) {
      loss += e.loss();
      accuracy += e.accuracy();
      if (Double.isFinite(e.auc()) && e.auc() > 0) {
        auc += e.auc();
        aucCount++;
      }
    }
    PassStatus.Builder b =
        PassStatus.newBuilder()
            .setPass(pass)
            .setTasks(finalCounts != null ? finalCounts : liveCounts)
            .setRecords(records)
            .setDuplicates(duplicates)
            .addAllTrainers(trainers)
            .setEvalReports(count)
            .setStartedMs(startedMs)
            .setEndedMs(endedMs)
            .setTimeouts(timeouts);
    if (count > 0) {
      b.setEvalLoss(loss / count).setEvalAccuracy(accuracy / count);
    }
    if (aucCount > 0) {
      b.setEvalAuc(auc / aucCount);
    }
    return b.build();
  }

  static PassLedger fromProto(PassStatus p) {
    PassLedger l = new PassLedger(p.getPass(), p.getStartedMs());
    l.endedMs = p.getEndedMs();
    l.records = p.getRecords();
    l.duplicates = p.getDuplicates();
    l.timeouts = p.getTimeouts();
    l.trainers.addAll(p.getTrainersList());
    l.restoredEvalCount = p.getEvalReports();
    l.restoredLossSum = p.getEvalLoss() * p.getEvalReports();
    l.restoredAccuracySum = p.getEvalAccuracy() * p.getEvalReports();
    if (p.getEvalAuc() > 0) {
      // the count of AUC reports is not stored: assume every report carried one
      l.restoredAucSum = p.getEvalAuc() * p.getEvalReports();
      l.restoredAucCount = p.getEvalReports();
    }
    if (p.getEndedMs() != 0) {
      l.finalCounts = p.getTasks();
    }
    return l;
  }
}
