/**
 * The Master gRPC service: {@link dev.paramserver.master.grpc.MasterGrpcService}, a thin adapter
 * that converts protos and calls {@code MasterJob}; errors are mapped by rpc-support's
 * ErrorMappingInterceptor.
 */
package dev.paramserver.master.grpc;
