package dev.paramserver.service;

/**
 * Declares that a service runs without etcd: with a bean of this type in the context, {@link
 * ServiceSupportAutoConfiguration} creates no {@link dev.paramserver.etcd.Coordinator}, no "etcd"
 * health indicator and no etcd gauge, so the service neither connects to etcd nor needs its
 * settings. A trainer coordinated by the master declares one.
 *
 * @param reason why, for the log line at startup ("paramserver.trainer.coordination.mode=master")
 */
public record EtcdOptOut(String reason) {}
