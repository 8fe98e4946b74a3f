package dev.paramserver.serving.grpc;

import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.NamedTensor;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PredictRequest;
import dev.paramserver.proto.v1.PredictResponse;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ServingPullRequest;
import dev.paramserver.proto.v1.ServingPullResponse;
import dev.paramserver.proto.v1.ServingStatus;
import dev.paramserver.proto.v1.ServingStatusRequest;
import dev.paramserver.proto.v1.ServingVersion;
import dev.paramserver.rpc.Offload;
import dev.paramserver.serving.replica.Lookups;
import dev.paramserver.serving.replica.Predictions;
import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;

/**
 * The Serving gRPC service: converts requests, calls {@link Lookups}, converts answers. Errors are
 * {@code ServiceException}s mapped to statuses by the service's error interceptor.
 *
 * <p>Handlers run on gRPC's transport threads. A lookup of a version served already never waits and
 * is answered there; a read that may wait (its {@code min_version} not reached yet, no copy yet)
 * and pulls run on {@code reads}, a bounded pool.
 */
public final class ServingGrpcService extends ServingGrpc.ServingImplBase {
  private final Lookups lookups;
  private final Predictions predictions;
  private final ServingReplica status;
  private final Executor reads;
  // the wire form of the version answered last: a version changes with each record applied, and
  // lookups come about ten times as often, so most answers reuse it instead of building it anew
  private volatile WireVersion lastVersion;

  private record WireVersion(ServedVersion version, ServingVersion proto) {}

  public ServingGrpcService(
      Lookups lookups, Predictions predictions, ServingReplica status, Executor reads) {
    this.lookups = lookups;
    this.predictions = predictions;
    this.status = status;
    this.reads = reads;
  }

  @Override
  public void lookup(LookupRequest request, StreamObserver<LookupResponse> out) {
    long[] ids = new long[request.getIdsCount()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = request.getIds(i);
    }
    ServedVersion.Minimum min = minimum(request.getMinVersion());
    if (lookups.servedNow(min)) {
      try {
        answer(out, lookup(request, ids, min, Duration.ZERO));
        return;
      } catch (ServiceException e) {
        if (e.reason() != ErrorReason.VERSION_NOT_REACHED
            && e.reason() != ErrorReason.NOT_INITIALIZED) {
          throw e;
        }
        // a shard reloaded from a primary that lost records stepped back: wait as asked
      }
    }
    Duration wait = lookups.waitFor(request.getMinVersion().getWaitMs());
    Offload.run(
        reads, ServingGrpc.SERVICE_NAME + "/Lookup", out, () -> lookup(request, ids, min, wait));
  }

  private LookupResponse lookup(
      LookupRequest request, long[] ids, ServedVersion.Minimum min, Duration wait) {
    Lookups.Rows rows = lookups.lookup(request.getTable(), ids, request.getWidth(), min, wait);
    LookupResponse.Builder b =
        LookupResponse.newBuilder()
            .setVersion(version(rows.version()))
            .setWidth(rows.width())
            .setValues(UnsafeByteOperations.unsafeWrap(floats(rows.values())));
    for (int d : rows.defaulted()) {
      b.addDefaulted(d);
    }
    return b.build();
  }

  private static <T> void answer(StreamObserver<T> out, T value) {
    out.onNext(value);
    out.onCompleted();
  }

  @Override
  public void pull(ServingPullRequest request, StreamObserver<ServingPullResponse> out) {
    Offload.run(reads, ServingGrpc.SERVICE_NAME + "/Pull", out, () -> pull(request));
  }

  private ServingPullResponse pull(ServingPullRequest request) {
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
    return b.build();
  }

  @Override
  public void predict(PredictRequest request, StreamObserver<PredictResponse> out) {
    Offload.run(reads, ServingGrpc.SERVICE_NAME + "/Predict", out, () -> predict(request));
  }

  private PredictResponse predict(PredictRequest request) {
    Predictions.Answer a =
        predictions.predict(
            request.getExamplesList(),
            minimum(request.getMinVersion()),
            lookups.waitFor(request.getMinVersion().getWaitMs()));
    PredictResponse.Builder b =
        PredictResponse.newBuilder().setVersion(version(a.version())).setClasses(a.classes());
    for (float p : a.probabilities()) {
      b.addProbabilities(p);
    }
    for (int c : a.predicted()) {
      b.addPredicted(c);
    }
    return b.build();
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

  private ServingVersion version(ServedVersion v) {
    WireVersion last = lastVersion;
    if (last == null || !last.version().equals(v)) {
      last = new WireVersion(v, v.toProto());
      lastVersion = last;
    }
    return last.proto();
  }
}
