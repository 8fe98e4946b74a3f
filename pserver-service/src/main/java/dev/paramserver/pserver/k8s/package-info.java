/**
 * Running under Kubernetes ({@code paramserver.pserver.kubernetes.*}): {@code JobGrowth} grows the
 * job when a StatefulSet scales up, {@code PreStopHook} (door for the pod's preStop call, through
 * {@code web.PreStopController}) scales it down; both reach the leader master through {@code
 * LeaderMaster} and the Kubernetes API through {@code KubernetesApi}.
 */
package dev.paramserver.pserver.k8s;
