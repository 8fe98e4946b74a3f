package dev.paramserver.pserver.admin;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.registration.RegistrationState;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.pserver.shard.SparseTableStats;
import dev.paramserver.service.AdminStatusSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Component;

/**
 * {@code GET /admin/status} of a pserver: state REGISTERING, UNINITIALISED, SERVING or DRAINING;
 * identity {@code host:grpcPort}; details index, initialised, initId, mode, staleness, step,
 * parameters, blocks, bytes, sparseTables [{name, rows, bytes, evictions, admissionsRefused,
 * maxRows (null: no cap)}], optimizers {parameter name: the optimizer settings it was initialised
 * with, fields left at 0 omitted}, lastCheckpoint {path, step, timestamp}, pushes and pulls (served
 * since the start) and applyP99Ms (99th percentile of the last 1024 pushes' apply times; null
 * before any push).
 */
@Component
public final class PserverStatusSource implements AdminStatusSource {
  private final ShardRegistration registration;
  private final ParameterShard shard;
  private final CheckpointService checkpoints;
  private final ShardTraffic traffic;

  public PserverStatusSource(
      ShardRegistration registration,
      ParameterShard shard,
      CheckpointService checkpoints,
      ShardTraffic traffic) {
    this.traffic = traffic;
    this.registration = registration;
    this.shard = shard;
    this.checkpoints = checkpoints;
  }

  @Override
  public String role() {
    return "pserver";
  }

  @Override
  public String state() {
    RegistrationState r = registration.state();
    return switch (r) {
      case NEW, REGISTERING -> "REGISTERING";
      case DRAINING, STOPPED -> "DRAINING";
      case REGISTERED -> shard.initialised() ? "SERVING" : "UNINITIALISED";
    };
  }

  @Override
  public String identity() {
    String a = registration.address();
    return a == null ? "(gRPC server not started)" : a;
  }

  @Override
  public Map<String, Object> details() {
    ShardStatus s = shard.status();
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("index", registration.index());
    d.put("initialised", s.getInitialised());
    d.put("initId", s.getInitId());
    d.put("mode", s.getMode().name());
    d.put("staleness", shard.staleness());
    d.put("step", s.getStep());
    d.put("parameters", s.getParameters());
    d.put("blocks", s.getBlocks());
    d.put("bytes", s.getParameterBytes());
    // elastic placement: the committed epoch routed by, and the slot move in progress ("" if none)
    d.put("placementEpoch", s.getPlacementEpoch());
    d.put("moveInProgress", s.getMoveInProgress());
    List<Map<String, Object>> tables = new ArrayList<>();
    for (SparseTableStats t : shard.sparseTables()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("name", t.name());
      m.put("rows", t.rows());
      m.put("bytes", t.bytes());
      m.put("evictions", t.evictions());
      m.put("admissionsRefused", t.admissionsRefused());
      m.put("maxRows", t.maxRows() == Long.MAX_VALUE ? null : t.maxRows());
      tables.add(m);
    }
    d.put("sparseTables", tables);
    Map<String, Object> optimizers = new LinkedHashMap<>();
    shard.optimizers().forEach((name, config) -> optimizers.put(name, fields(config)));
    d.put("optimizers", optimizers);
    CheckpointService.LastCheckpoint last = checkpoints.last();
    if (last != null) {
      Map<String, Object> c = new LinkedHashMap<>();
      c.put("path", last.path());
      c.put("step", last.step());
      c.put("timestamp", last.timestampMs());
      d.put("lastCheckpoint", c);
    } else {
      d.put("lastCheckpoint", null);
    }
    d.put("pushes", traffic.pushes());
    d.put("pulls", traffic.pulls());
    double p99 = traffic.applyP99Millis();
    d.put("applyP99Ms", Double.isNaN(p99) ? null : p99);
    return d;
  }

  /** The fields of a message that are set (proto3 JSON names; enums by name). */
  static Map<String, Object> fields(Message m) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<Descriptors.FieldDescriptor, Object> e : m.getAllFields().entrySet()) {
      Object v = e.getValue();
      if (v instanceof Message nested) {
        v = fields(nested);
      } else if (v instanceof Descriptors.EnumValueDescriptor en) {
        v = en.getName();
      }
      out.put(e.getKey().getJsonName(), v);
    }
    return out;
  }
}
