package dev.paramserver.etcd;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a serving replica publishes about itself in etcd ({@code serving/<id>}, under its lease, so
 * that it vanishes with the replica): where to reach it and what it serves. The replica rewrites it
 * when it changes, at most once per {@code paramserver.serving.registration-interval}; the leader
 * master's console reads it.
 *
 * <p>Stored as {@code key=value} lines, so that it reads well in {@code etcdctl get}.
 *
 * @param address the replica's gRPC address ({@code host:port})
 * @param adminAddress its HTTP address (REST reads, {@code /admin}), empty when unknown
 * @param state LOADING (some shard has no copy yet) or SERVING
 * @param source FOLLOWING (the job's pservers), PINNED (a job-wide checkpoint) or MODEL_FILE
 * @param version the number of the version served, 0 while LOADING
 * @param sequences the sequence of each shard in the version served, by shard index (empty while
 *     LOADING): compared with a pserver's step it gives how many updates the replica is behind
 * @param lagMs the largest lag of a shard's stream: from the primary applying a record to the
 *     replica serving it, as last measured
 * @param connected how many shards have their change stream open
 */
public record ServingReplicaRecord(
    String address,
    String adminAddress,
    String state,
    String source,
    long version,
    List<Long> sequences,
    long lagMs,
    int connected) {

  public ServingReplicaRecord {
    adminAddress = adminAddress == null ? "" : adminAddress;
    sequences = List.copyOf(sequences);
  }

  public byte[] encode() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("address", address);
    m.put("admin_address", adminAddress);
    m.put("state", state);
    m.put("source", source);
    m.put("version", Long.toString(version));
    StringBuilder seq = new StringBuilder();
    for (long s : sequences) {
      seq.append(seq.isEmpty() ? "" : ",").append(s);
    }
    m.put("sequences", seq.toString());
    m.put("lag_ms", Long.toString(lagMs));
    m.put("connected", Integer.toString(connected));
    StringBuilder b = new StringBuilder();
    m.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Parses a record written by {@link #encode}; keys it does not know are ignored (a newer replica
   * may write more).
   *
   * @throws IllegalArgumentException naming the problem when it is not one
   */
  public static ServingReplicaRecord decode(byte[] bytes) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      int eq = line.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(
            "serving replica record: '" + line + "' is not key=value");
      }
      m.put(line.substring(0, eq), line.substring(eq + 1));
    }
    String address = m.get("address");
    if (address == null || address.isEmpty()) {
      throw new IllegalArgumentException("serving replica record: 'address' is missing");
    }
    try {
      List<Long> sequences = new ArrayList<>();
      for (String s : m.getOrDefault("sequences", "").split(",")) {
        if (!s.isBlank()) {
          sequences.add(Long.parseLong(s.trim()));
        }
      }
      return new ServingReplicaRecord(
          address,
          m.getOrDefault("admin_address", ""),
          m.getOrDefault("state", ""),
          m.getOrDefault("source", ""),
          Long.parseLong(m.getOrDefault("version", "0")),
          sequences,
          Long.parseLong(m.getOrDefault("lag_ms", "0")),
          Integer.parseInt(m.getOrDefault("connected", "0")));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("serving replica record: " + e.getMessage(), e);
    }
  }
}
