package dev.paramserver.service;

import java.util.Map;

/**
 * What a service reports on {@code GET /admin/status}. Each service defines one bean of this type;
 * the response is {@code {"role", "state", "identity"}} followed by {@link #details()}.
 */
public interface AdminStatusSource {

  /** "master", "pserver" or "trainer". */
  String role();

  /** The role's current state, for example "LEADER", "STANDBY", "SERVING", "TRAINING". */
  String state();

  /** Who this instance is, for example {@code host:grpcPort} or a trainer id. */
  String identity();

  /**
   * Role-specific fields, serialised with Jackson (maps, lists, strings, numbers, booleans; a
   * protobuf message should be converted to a Map or JSON tree first). Must not contain "role",
   * "state" or "identity" (those are ignored).
   */
  Map<String, Object> details();
}
