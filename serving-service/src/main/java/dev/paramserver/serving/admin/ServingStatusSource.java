package dev.paramserver.serving.admin;

import dev.paramserver.etcd.ServingReplicaRecord;
import dev.paramserver.service.AdminStatusSource;
import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import dev.paramserver.serving.replica.ShardFollower;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Component;

/**
 * {@code GET /admin/status} of a serving replica: state LOADING (some shard has no copy yet) or
 * SERVING; identity the replica's instance id; details job (or the model file served), source
 * (FOLLOWING, PINNED or MODEL_FILE), pinned (the job-wide checkpoint pinned, 0: none), loadedFrom
 * (the snapshot last loaded whole, "" when none), version {number, shards [{index, epoch,
 * sequence}]} (null while LOADING) and shards [{index, primary, epoch, sequence, connected, copies,
 * lagMs, records, lastRefusal}] (lastRefusal: the status code and description of the primary's last
 * refusal of the shard's stream, "" when none since a stream last delivered).
 */
@Component
public final class ServingStatusSource implements AdminStatusSource {
  private final ServingReplica replica;

  public ServingStatusSource(ServingReplica replica) {
    this.replica = replica;
  }

  @Override
  public String role() {
    return "serving";
  }

  @Override
  public String state() {
    return replica.model().version() == null ? "LOADING" : "SERVING";
  }

  @Override
  public String identity() {
    return replica.model().replica();
  }

  @Override
  public Map<String, Object> details() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("job", replica.origin());
    d.put("source", replica.source().name());
    d.put("pinned", replica.pinned());
    d.put("loadedFrom", replica.loadedFrom());
    ServedVersion v = replica.model().version();
    if (v == null) {
      d.put("version", null);
    } else {
      Map<String, Object> vm = new LinkedHashMap<>();
      vm.put("number", v.number());
      List<Map<String, Object>> at = new ArrayList<>();
      for (ServedVersion.Position p : v.shards()) {
        at.add(Map.of("index", p.index(), "epoch", p.epoch(), "sequence", p.sequence()));
      }
      vm.put("shards", at);
      d.put("version", vm);
    }
    List<Map<String, Object>> shards = new ArrayList<>();
    for (ShardFollower.Status s : replica.shards()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("index", s.index());
      m.put("primary", s.primary());
      m.put("epoch", s.epoch());
      m.put("sequence", s.sequence());
      m.put("connected", s.connected());
      m.put("copies", s.copies());
      m.put("lagMs", s.lagMs());
      m.put("records", s.records());
      m.put("lastRefusal", s.lastRefusal());
      shards.add(m);
    }
    d.put("shards", shards);
    return d;
  }

  /**
   * What the replica publishes in etcd ({@code serving/<id>}): reached at {@code address} (gRPC)
   * and {@code adminAddress} (HTTP), its state, source, the version served and each shard's
   * sequence in it, the largest stream lag and how many streams are open.
   */
  public ServingReplicaRecord record(String address, String adminAddress) {
    ServedVersion v = replica.model().version();
    List<Long> sequences = new ArrayList<>();
    if (v != null) {
      v.shards().forEach(p -> sequences.add(p.sequence()));
    }
    long lagMs = 0;
    int connected = 0;
    for (ShardFollower.Status s : replica.shards()) {
      lagMs = Math.max(lagMs, s.lagMs());
      connected += s.connected() ? 1 : 0;
    }
    return new ServingReplicaRecord(
        address,
        adminAddress,
        state(),
        replica.source().name(),
        v == null ? 0 : v.number(),
        sequences,
        lagMs,
        connected);
  }
}
