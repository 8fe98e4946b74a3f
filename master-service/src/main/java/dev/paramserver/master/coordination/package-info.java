/**
 * Coordination of trainers without an etcd client (joins, memberships, the cluster map, block
 * placement, locks): {@link dev.paramserver.master.coordination.CoordinatedTrainers} is the door
 * for {@code master.grpc.CoordinationGrpcService}, the gRPC adapter; {@code LeaderCheck} answers
 * NOT_LEADER on a standby.
 */
package dev.paramserver.master.coordination;
