/**
 * The Master gRPC service: {@link dev.paramserver.master.grpc.MasterGrpcService}, a thin adapter
 * that converts protos and calls {@code MasterJob}; errors are mapped by rpc-support's
 * ErrorMappingInterceptor. Also the master's outbound calls to the pservers, behind the domain's
 * interfaces: {@code GrpcPserverStatuses} (the console's {@code PserverStatuses}) and {@code
 * GrpcPserverCalls} (placement's {@code PserverCalls}), which map a failed call to a {@code
 * ServiceException}.
 */
package dev.paramserver.master.grpc;
