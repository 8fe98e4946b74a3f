/**
 * The master's {@code paramserver.master.*} metrics: {@link
 * dev.paramserver.master.metrics.MasterMetrics}, bound by the wiring (the scaling's own are bound
 * by the coordinator).
 */
package dev.paramserver.master.metrics;
