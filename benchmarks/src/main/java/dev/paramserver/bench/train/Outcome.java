package dev.paramserver.bench.train;

import java.util.List;
import java.util.Map;

/**
 * What one training run measured.
 *
 * @param steady samples per second over the second half of the passes ({@link
 *     TrainSuite#firstSteadyPass})
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
 */
record Outcome(
    double steady,
    double wholeJob,
    double quality,
    double pass0,
    List<Double> perPass,
    double firstTask,
    double firstTaskSlack,
    Map<String, Double> startup) {}
