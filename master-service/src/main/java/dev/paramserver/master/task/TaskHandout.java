package dev.paramserver.master.task;

import dev.paramserver.master.dataset.IndexedDataset;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.Task;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * GetTask: the reports it carries, the tasks it hands out (several per answer, within a fair
 * share), an asynchronous trainer's WAIT held until the job changes, and a retried request answered
 * with the tasks its lost answer held ({@link MasterJob#getTask(String, int, List, long, int,
 * String)} has the contract). With {@code min-trainers}, the job's first task waits until that many
 * trainers are registered.
 */
final class TaskHandout {
  private static final Logger log = LoggerFactory.getLogger(TaskHandout.class);

  /** Most tasks one GetTask hands out. */
  static final int MAX_TASKS_PER_CALL = 16;

  /** Told of each task report a GetTask carried, once its change is saved. */
  @FunctionalInterface
  interface ReportListener {
    void onReport(String trainer, MasterJob.Finished finished, ReportOutcome report);
  }

  private final ServedQueue served;
  private final Duration waitRetry;
  private final TaskTimeouts timeouts;
  private final UnansweredTasks unanswered;
  private final ReportListener reports;
  private final int minTrainers;
  private final IntSupplier registered;
  private int lastLoggedRegistered = -1; // guarded by served.lock

  /**
   * @param minTrainers trainers registered before the first task goes out (0: none)
   * @param registered how many trainers are registered now
   */
  TaskHandout(
      ServedQueue served,
      Duration waitRetry,
      TaskTimeouts timeouts,
      UnansweredTasks unanswered,
      ReportListener reports,
      int minTrainers,
      IntSupplier registered) {
    this.served = served;
    this.waitRetry = waitRetry;
    this.timeouts = timeouts;
    this.unanswered = unanswered;
    this.reports = reports;
    this.minTrainers = minTrainers;
    this.registered = registered;
  }

  GetTaskResponse getTask(
      String trainer,
      int pass,
      List<MasterJob.Finished> finished,
      long holdMs,
      int maxTasks,
      String requestId,
      long lossEveryRecords) {
    IndexedDataset ds;
    List<ReportOutcome> reported = new ArrayList<>();
    List<Dispatch> extra = new ArrayList<>();
    int want = Math.max(1, Math.min(maxTasks, MAX_TASKS_PER_CALL));
    // only an asynchronous trainer lets the master hold its WAIT answers: it need not take part in
    // synchronous steps, nor wait for the others at a pass's end, so it may lease ahead
    boolean ahead = holdMs > 0;
    boolean held = false;
    ServedQueue.Applied<Dispatch> a;
    Object lock = served.lock;
    synchronized (lock) {
      served.requireServing();
      TaskQueue q = served.requireQueue();
      ds = served.dataset();
      List<Dispatch> again = q.pendingUnder(trainer, requestId);
      if (!again.isEmpty()) {
        log.info(
            "GetTask {} of trainer '{}' is a retry of an answer that did not reach it: its {}"
                + " task(s) go out again",
            requestId,
            trainer,
            again.size());
        extra.addAll(again.subList(1, again.size()));
        a = served.unchanged(again.get(0));
      } else if (!finished.isEmpty()) {
        a =
            served.apply(
                c -> {
                  finished.forEach(f -> reported.add(c.finished(f.taskId(), f.epoch())));
                  return next(c, trainer, pass, want, ahead, extra, requestId);
                });
      } else {
        a = dispatch(q, trainer, pass, want, ahead, extra, requestId);
      }
    }
    Dispatch d = awaitSaved(a, trainer, extra);
    long hold = Math.min(TimeUnit.MILLISECONDS.toNanos(holdMs), waitRetry.toNanos());
    long until = System.nanoTime() + hold;
    while (hold > 0 && d.outcome() == Dispatch.Outcome.WAIT) {
      synchronized (lock) {
        served.requireServing();
        if (served.requireQueue().holds(trainer)) {
          break;
        }
        held = true;
        long left = until - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
        served.requireServing();
        ds = served.dataset();
        a = dispatch(served.requireQueue(), trainer, pass, want, ahead, extra, requestId);
      }
      d = awaitSaved(a, trainer, extra);
    }
    for (int i = 0; i < reported.size(); i++) {
      reports.onReport(trainer, finished.get(i), reported.get(i));
    }
    GetTaskResponse.Builder b =
        GetTaskResponse.newBuilder()
            .setOutcome(GetTaskResponse.Outcome.valueOf(d.outcome().name()))
            .setCurrentPass(d.currentPass())
            .setTotalPasses(d.totalPasses())
            .setReason(d.reason());
    switch (d.outcome()) {
      case TASK -> {
        b.setTask(task(ds, d)).setLossEveryRecords(lossEveryRecords);
        for (Dispatch e : extra) {
          b.addMoreTasks(task(ds, e));
        }
      }
      case WAIT, PASS_NOT_STARTED ->
          b.setRetryAfterMs(
              held && d.outcome() == Dispatch.Outcome.WAIT ? 0 : (int) waitRetry.toMillis());
      default -> {}
    }
    return b.build();
  }

  /** Waits for {@code a}'s commit; a failed one leaves its tasks noted as never answered. */
  private Dispatch awaitSaved(
      ServedQueue.Applied<Dispatch> a, String trainer, List<Dispatch> extra) {
    try {
      served.commits().await(a.batch());
    } catch (RuntimeException e) {
      unanswered.note(trainer, a.result(), extra);
      throw e;
    }
    return a.result();
  }

  private static Task task(IndexedDataset ds, Dispatch d) {
    return Task.newBuilder()
        .setId(d.taskId())
        .setEpoch(d.epoch())
        .setPass(d.taskPass())
        .addAllChunks(ds.chunksOf(d.taskId()))
        .build();
  }

  private ServedQueue.Applied<Dispatch> dispatch(
      TaskQueue q,
      String trainer,
      int pass,
      int want,
      boolean ahead,
      List<Dispatch> extra,
      String requestId) {
    if (minTrainers > 0 && !q.started()) {
      int now = registered.getAsInt();
      if (now < minTrainers) {
        if (now != lastLoggedRegistered) {
          lastLoggedRegistered = now;
          log.info(
              "the first task waits for {} registered trainers (paramserver.master.min-trainers);"
                  + " {} registered",
              minTrainers,
              now);
        }
        return served.unchanged(
            q.waitFor(
                "the job starts once "
                    + minTrainers
                    + " trainers are registered (paramserver.master.min-trainers); "
                    + now
                    + " are"));
      }
    }
    return q.canDispatch(pass, ahead)
        ? served.apply(c -> next(c, trainer, pass, want, ahead, extra, requestId))
        // changes nothing, but answers from changes that may not be saved yet
        : served.unchanged(q.next(trainer, pass, timeouts.current(), ahead));
  }

  /**
   * The next task for the trainer, and up to {@code want - 1} more into {@code extra}. The k-th
   * task of an answer gets k task timeouts, since the trainer starts it only after the ones before.
   */
  private Dispatch next(
      TaskQueue c,
      String trainer,
      int pass,
      int want,
      boolean ahead,
      List<Dispatch> extra,
      String requestId) {
    int share = Math.min(want, c.leaseShare(trainer));
    Duration timeout = timeouts.current();
    Dispatch first = c.next(trainer, pass, timeout, ahead);
    while (first.outcome() == Dispatch.Outcome.TASK
        && extra.size() + 1 < share
        && c.canDispatch(pass, ahead)) {
      extra.add(c.next(trainer, pass, timeout.multipliedBy(extra.size() + 2), ahead));
    }
    if (first.outcome() == Dispatch.Outcome.TASK && !requestId.isEmpty()) {
      c.handedOutUnder(first.taskId(), requestId);
      extra.forEach(e -> c.handedOutUnder(e.taskId(), requestId));
    }
    return first;
  }
}
