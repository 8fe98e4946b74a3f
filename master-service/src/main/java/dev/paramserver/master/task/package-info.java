/**
 * The job and its tasks (docs/design.md §3): {@link dev.paramserver.master.task.MasterJob} is the
 * door for the gRPC adapter, the console and the election. Behind it: {@code ServedQueue} (serving,
 * the state and its fenced saves, {@code QueueCommits}), {@code DatasetSetup} (SetDataset), {@code
 * TaskHandout} (GetTask), and {@link dev.paramserver.master.task.TaskQueue} (the queues' rules)
 * with {@code PassCycle} (passes), {@code TaskTakeBacks} (timeouts, departed trainers, lost
 * answers), {@code TaskQueueSnapshots} and {@code TaskQueueStatus}. {@code TimeoutChecker} and
 * {@code TrainerDepartures} call the job on their own threads.
 */
package dev.paramserver.master.task;
