package dev.paramserver.bench.train;

import java.util.List;
import java.util.Map;

/**
 * What one training run measured.
 *
 * @param steady samples per second of the measured window: the records of the tasks finished from
 *     the end of the warm-up pass (pass 0) to the end of the last pass over the wall time between
 *     them ({@link Yardstick}; one JVM: its passes after the first over their time)
 * @param wholeJob all records of all passes per second from launch to the end of the last pass
 * @param quality the final accuracy or AUC ({@link Workload#metric()})
 * @param pass0 samples per second of the first pass
 * @param perPass samples per second of each pass
 * @param firstTask seconds from launch until the master handed out the first task (NaN for the
 *     single JVM, which has no master)
 * @param firstTaskSlack how much earlier than {@code firstTask} the hand-out may have been: the
 *     time between the last look at the master that saw no task and the answer of the first that
 *     saw one
 * @param startup seconds from launch to each start-up milestone of the 1 + 1 job's processes
 *     ({@link StartupTimeline}); empty for the single JVM and larger jobs
 * @param sparse figures of a sparse model's tables, empty for dense ones: the single JVM's {@code
 *     rows_per_sample} (distinct ids per batch, summed over the batches of its first pass, per
 *     record: the embedding rows a batch reads and updates), a distributed job's {@code
 *     pserver_rows_<table>} and {@code pserver_bytes_<table>} (rows held by each table and their
 *     storage, summed over its pservers at the end of the job: {@link PserverTables}) and {@code
 *     pserver_heap_used_bytes} (its first pserver's heap in use then, garbage included)
 * @param passDurationRate the old steady figure, kept one release: records of the second half of
 *     the passes over the sum of their durations (which overlap in a distributed job)
 * @param window the measured window ({@code window_seconds}, {@code window_records}, {@code
 *     window_ahead_records}: records of later passes done before it began) and the CPU spent in it
 *     ({@link dev.paramserver.bench.cpu.CpuWindow#figures}); empty when not measured
 */
record Outcome(
    double steady,
    double wholeJob,
    double quality,
    double pass0,
    List<Double> perPass,
    double firstTask,
    double firstTaskSlack,
    Map<String, Double> startup,
    Map<String, Double> sparse,
    double passDurationRate,
    Map<String, Double> window) {

  /** A sparse figure of {@link #sparse}, NaN when absent. */
  double sparse(String name) {
    return sparse.getOrDefault(name, Double.NaN);
  }

  /** This outcome with {@code figures} as its {@link #sparse} figures. */
  Outcome withSparse(Map<String, Double> figures) {
    return new Outcome(
        steady,
        wholeJob,
        quality,
        pass0,
        perPass,
        firstTask,
        firstTaskSlack,
        startup,
        figures,
        passDurationRate,
        window);
  }

  /** A figure of {@link #window}, NaN when absent. */
  double window(String name) {
    return window.getOrDefault(name, Double.NaN);
  }
}
