/**
 * The ParameterServer gRPC adapter: {@code ParameterServerGrpcService} is the door for trainers
 * (init, push, pull, status) and converts each call into a call on {@code ParameterShard}; {@code
 * PushStream} runs one {@code StreamPushes} call. Errors are mapped in one place (rpc-support's
 * {@code ErrorMappingInterceptor}).
 */
package dev.paramserver.pserver.grpc;
