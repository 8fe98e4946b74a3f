/**
 * The job's persistent state: {@link dev.paramserver.master.state.JobStore} is the door for the
 * {@code task} package (the dataset and the queue's snapshots, written fenced on the leadership);
 * {@link dev.paramserver.master.state.EtcdJobStore} keeps them in etcd.
 */
package dev.paramserver.master.state;
