/**
 * The ParameterServer gRPC adapter: {@code ParameterServerGrpcService} is the door for trainers
 * (init, push, pull, status) and converts each call into a call on {@code ParameterShard}; {@code
 * PushStream} runs one {@code StreamPushes} call. The other services of a pserver are adapters too:
 * {@code ShardFollowGrpcService} (followers of a shard's changes), {@code
 * ShardReplicationGrpcService} (the primary's calls to its backup, over {@code
 * replication.BackupCalls}) and {@code SlotMovesGrpcService} (slot moves, over {@code
 * placement.MoveRequests}). Errors are mapped in one place (rpc-support's {@code
 * ErrorMappingInterceptor}).
 */
package dev.paramserver.pserver.grpc;
