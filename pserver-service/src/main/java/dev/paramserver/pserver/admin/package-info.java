/**
 * The pserver's admin surface (HTTP and meters): {@code PserverStatusSource} answers {@code GET
 * /admin/status} for the master's console and psctl, {@code web.CheckpointController} answers
 * {@code POST /admin/checkpoint}, {@code PserverMetrics} registers the {@code
 * paramserver_pserver_*} meters, {@code ShardHealthIndicator} the readiness, {@code
 * LogHealthIndicator} the liveness (DOWN once the write-ahead log failed). They read the shard, the
 * registration and the checkpoint service; they change nothing but ask for a checkpoint.
 */
package dev.paramserver.pserver.admin;
