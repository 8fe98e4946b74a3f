package dev.paramserver.adminapi;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

/**
 * The fields every service's {@code GET /admin/status} has, and the build the master reports there.
 * A service adds role-specific fields, which this record does not read.
 *
 * @param role "master", "pserver" or "trainer"
 * @param state the role's state, e.g. LEADER, STANDBY, SERVING, TRAINING
 * @param identity who the instance is, e.g. {@code host:grpcPort} or a trainer id
 * @param version the master's {@link BuildInfo#version()} (null from other services and older
 *     masters)
 * @param commit the master's {@link BuildInfo#commit()} (null where {@code version} is)
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ServiceStatus(
    String role, String state, String identity, String version, String commit) {}
