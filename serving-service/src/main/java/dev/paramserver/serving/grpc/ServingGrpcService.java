package dev.paramserver.serving.grpc;

import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.NamedTensor;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ServingPullRequest;
import dev.paramserver.proto.v1.ServingPullResponse;
import dev.paramserver.proto.v1.ServingStatus;
import dev.paramserver.proto.v1.ServingStatusRequest;
import dev.paramserver.proto.v1.ServingVersion;
import dev.paramserver.serving.replica.Lookups;
import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;

/**
 * The Serving gRPC service: converts requests, calls {@link Lookups}, converts answers. Errors are
 * {@code ServiceException}s mapped to statuses by the service's error interceptor.
 */
public final class ServingGrpcService extends ServingGrpc.ServingImplBase {
  private final Lookups lookups;
  private final ServingReplica status;

  public ServingGrpcService(Lookups lookups, ServingReplica status) {
    this.lookups = lookups;
    this.status = status;
  }

  @Override
  public void lookup(LookupRequest request, StreamObserver<LookupResponse> out) {
    long[] ids = new long[request.getIdsCount()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = request.getIds(i);
    }
    Lookups.Rows rows =
        lookups.lookup(
            request.getTable(),
            ids,
            request.getWidth(),
            minimum(request.getMinVersion()),
            lookups.waitFor(request.getMinVersion().getWaitMs()));
    LookupResponse.Builder b =
        LookupResponse.newBuilder()
            .setVersion(version(rows.version()))
            .setWidth(rows.width())
            .setValues(UnsafeByteOperations.unsafeWrap(floats(rows.values())));
    for (int d : rows.defaulted()) {
      b.addDefaulted(d);
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  @Override
  public void pull(ServingPullRequest request, StreamObserver<ServingPullResponse> out) {
    Lookups.Dense dense =
        lookups.pull(
            request.getNamesList(),
            minimum(request.getMinVersion()),
            lookups.waitFor(request.getMinVersion().getWaitMs()));
    ServingPullResponse.Builder b =
        ServingPullResponse.newBuilder().setVersion(version(dense.version()));
    for (Map.Entry<String, float[]> e : dense.values().entrySet()) {
      ParameterSpec spec = dense.specs().get(e.getKey());
      b.addTensors(
          NamedTensor.newBuilder()
              .setName(e.getKey())
              .addAllShape(spec.getShapeList())
              .setDtype(DataType.FLOAT32)
              .setData(UnsafeByteOperations.unsafeWrap(floats(e.getValue()))));
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  @Override
  public void getServingStatus(ServingStatusRequest request, StreamObserver<ServingStatus> out) {
    out.onNext(status.toProto());
    out.onCompleted();
  }

  static byte[] floats(float[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(values);
    return b.array();
  }

  static ServedVersion.Minimum minimum(MinVersion m) {
    if (m.getShardsCount() == 0 && m.getReplica().isEmpty()) {
      return ServedVersion.Minimum.ANY;
    }
    List<ServedVersion.Position> shards =
        m.getShardsList().stream()
            .map(p -> new ServedVersion.Position(p.getIndex(), p.getEpoch(), p.getSequence()))
            .toList();
    return new ServedVersion.Minimum(shards, m.getNumber(), m.getReplica());
  }

  private static ServingVersion version(ServedVersion v) {
    return v.toProto();
  }
}
