/**
 * The dataset of a job: {@link dev.paramserver.master.dataset.DatasetIndexer} reads the chunk
 * headers (local files or S3), {@link dev.paramserver.master.dataset.TaskSizing} sizes the tasks,
 * {@link dev.paramserver.master.dataset.IndexedDataset} answers which chunks a task reads. Used by
 * the {@code task} package's {@code DatasetSetup} only.
 */
package dev.paramserver.master.dataset;
