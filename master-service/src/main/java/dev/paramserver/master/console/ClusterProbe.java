package dev.paramserver.master.console;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.ServingReplicaRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import tools.jackson.databind.JsonNode;

/**
 * Looks at the job's pservers and trainers: their etcd registrations ({@code ps/<i>} holds a
 * pserver's gRPC address, {@code trainers/<id>} a trainer's HTTP address, or {@code host:0} for a
 * trainer that joined through the master's Coordination service with no admin endpoint: it is shown
 * as joined, not probed), a pserver's HTTP address from its GetShardStatus (once per registration),
 * then every {@code /admin/status} at once, each bounded by the call timeout; and the serving
 * replicas' registrations ({@code serving/<id>}: they publish their numbers there, nothing is
 * probed). Not thread-safe: one sampler calls it.
 */
final class ClusterProbe implements AutoCloseable {
  private final Coordinator coordinator;
  private final PserverStatuses statuses;
  private final AdminClient admin;
  private final Duration timeout;
  private final Map<Long, String> adminAddresses = new HashMap<>();

  ClusterProbe(
      Coordinator coordinator, PserverStatuses statuses, AdminClient admin, Duration timeout) {
    this.coordinator = coordinator;
    this.statuses = statuses;
    this.admin = admin;
    this.timeout = timeout;
  }

  /** The indexes of the registered pservers (etcd only: safe on any thread). */
  Set<Integer> registeredPservers() {
    String prefix = coordinator.keys().psPrefix();
    Set<Integer> out = new TreeSet<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      int i = index(kv.key(), prefix);
      if (i >= 0) {
        out.add(i);
      }
    }
    return out;
  }

  /** The registered pservers, by index, each with its status or why it could not be read. */
  List<PserverSample> pservers() throws InterruptedException {
    String prefix = coordinator.keys().psPrefix();
    List<KeyValueStore.KeyValue> regs = new ArrayList<>(coordinator.kv().getPrefix(prefix));
    regs.sort((a, b) -> Integer.compare(index(a.key(), prefix), index(b.key(), prefix)));
    Map<Long, CompletableFuture<JsonNode>> calls = new LinkedHashMap<>();
    Map<Long, String> admin = new HashMap<>();
    for (KeyValueStore.KeyValue kv : regs) {
      String address = kv.valueAsString();
      String a = adminAddresses.computeIfAbsent(kv.createRevision(), r -> adminAddressOf(address));
      admin.put(kv.createRevision(), a);
      if (!a.isEmpty()) {
        calls.put(kv.createRevision(), admin(a).getAsync("/admin/status", timeout));
      }
    }
    adminAddresses.keySet().retainAll(admin.keySet()); // forget the registrations that are gone
    statuses.retainOnly(regs.stream().map(KeyValueStore.KeyValue::valueAsString).toList());
    List<PserverSample> out = new ArrayList<>();
    for (KeyValueStore.KeyValue kv : regs) {
      int index = index(kv.key(), prefix);
      String address = kv.valueAsString();
      String a = admin.get(kv.createRevision());
      CompletableFuture<JsonNode> call = calls.get(kv.createRevision());
      if (call == null) {
        adminAddresses.remove(kv.createRevision()); // ask again next time
        out.add(
            PserverSample.unreachable(
                index, address, kv.createRevision(), "", "no answer to GetShardStatus"));
        continue;
      }
      try {
        out.add(pserver(index, address, kv.createRevision(), a, await(call)));
      } catch (RuntimeException | ExecutionException | TimeoutException e) {
        out.add(PserverSample.unreachable(index, address, kv.createRevision(), a, reason(e)));
      }
    }
    return out;
  }

  /** The registered trainers, each with its status or why it could not be read. */
  List<TrainerSample> trainers() throws InterruptedException {
    String prefix = coordinator.keys().trainersPrefix();
    Map<String, String> regs = new java.util.TreeMap<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      regs.put(kv.key().substring(prefix.length()), kv.valueAsString());
    }
    Map<String, CompletableFuture<JsonNode>> calls = new LinkedHashMap<>();
    regs.forEach(
        (id, address) -> {
          if (!TrainerSample.hasNoAdminEndpoint(address)) {
            calls.put(id, admin(address).getAsync("/admin/status", timeout));
          }
        });
    List<TrainerSample> out = new ArrayList<>();
    for (Map.Entry<String, String> e : regs.entrySet()) {
      if (TrainerSample.hasNoAdminEndpoint(e.getValue())) {
        out.add(TrainerSample.coordinated(e.getKey(), e.getValue()));
        continue;
      }
      try {
        JsonNode s = await(calls.get(e.getKey()));
        JsonNode loss = s.path("loss");
        out.add(
            new TrainerSample(
                e.getKey(),
                e.getValue(),
                s.path("state").asString(""),
                s.path("pass").asInt(-1),
                s.path("task").asLong(-1),
                s.path("tasksDone").asLong(-1),
                s.path("samples").asLong(),
                s.path("samplesPerSecond").asDouble(),
                loss.isNumber() ? loss.asDouble() : null,
                ""));
      } catch (RuntimeException | ExecutionException | TimeoutException ex) {
        out.add(TrainerSample.unreachable(e.getKey(), e.getValue(), reason(ex)));
      }
    }
    return out;
  }

  /**
   * The serving replicas' registrations ({@code serving/<id>}), by replica id; a record that cannot
   * be read is left out.
   */
  Map<String, ServingReplicaRecord> serving() {
    String prefix = coordinator.keys().servingPrefix();
    Map<String, ServingReplicaRecord> out = new java.util.TreeMap<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      try {
        out.put(kv.key().substring(prefix.length()), ServingReplicaRecord.decode(kv.value()));
      } catch (IllegalArgumentException e) {
        // written by something else than a serving replica: not one to show
      }
    }
    return out;
  }

  /** The admin API of the service at {@code hostPort}, with the job's token. */
  AdminClient admin(String hostPort) {
    return admin.at("the service at " + hostPort, "http://" + hostPort);
  }

  private static PserverSample pserver(
      int index, String address, long registration, String admin, JsonNode s) {
    Map<String, Long> rows = new LinkedHashMap<>();
    for (JsonNode t : s.path("sparseTables")) {
      rows.put(t.path("name").asString(), t.path("rows").asLong());
    }
    JsonNode p99 = s.path("applyP99Ms");
    return new PserverSample(
        index,
        address,
        registration,
        admin,
        s.path("state").asString(""),
        s.path("initId").asString(""),
        s.path("step").asLong(),
        s.path("bytes").asLong(),
        rows,
        s.path("pushes").asLong(),
        s.path("pulls").asLong(),
        p99.isNumber() ? p99.asDouble() : null,
        s.path("lastCheckpoint").path("timestamp").asLong(0),
        "");
  }

  private String adminAddressOf(String grpcAddress) {
    try {
      return statuses.status(grpcAddress, timeout).getAdminAddress();
    } catch (RuntimeException e) {
      return "";
    }
  }

  private JsonNode await(CompletableFuture<JsonNode> call)
      throws InterruptedException, ExecutionException, TimeoutException {
    try {
      return call.get(timeout.toMillis() + 500, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      call.cancel(true);
      throw e;
    }
  }

  private static String reason(Exception e) {
    Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    if (t instanceof TimeoutException
        || t instanceof java.net.http.HttpTimeoutException
        || t.getCause() instanceof java.net.http.HttpTimeoutException) {
      return "no answer within the timeout";
    }
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
  }

  private static int index(String key, String prefix) {
    try {
      return Integer.parseInt(key.substring(prefix.length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  @Override
  public void close() {
    statuses.close();
  }
}
