package dev.paramserver.master.console;

import java.util.Map;

/**
 * What one look at a pserver found: its etcd registration and, when it answered, its {@code
 * /admin/status}.
 *
 * @param index the claimed index ({@code ps/<index>})
 * @param address its gRPC address (the registration's value)
 * @param registration the registration's etcd create revision (a new one: the pserver restarted)
 * @param adminAddress its HTTP address, "" when unknown
 * @param state SERVING, UNINITIALISED, ... or UNREACHABLE when its status could not be read
 * @param initId the initialisation in place ("" when none)
 * @param step updates applied
 * @param parameterBytes bytes of parameter values held
 * @param sparseRows rows per sparse table
 * @param pushes pushes served since it started
 * @param pulls pulls served since it started
 * @param applyP99Ms 99th percentile of its recent pushes' apply times (null: none yet)
 * @param checkpointMs when its newest checkpoint was written or loaded (0: none)
 * @param error why its status could not be read ("" when it could)
 */
record PserverSample(
    int index,
    String address,
    long registration,
    String adminAddress,
    String state,
    String initId,
    long step,
    long parameterBytes,
    Map<String, Long> sparseRows,
    long pushes,
    long pulls,
    Double applyP99Ms,
    long checkpointMs,
    String error) {

  /** A registered pserver whose status could not be read. */
  static PserverSample unreachable(
      int index, String address, long registration, String adminAddress, String error) {
    return new PserverSample(
        index,
        address,
        registration,
        adminAddress,
        "UNREACHABLE",
        "",
        0,
        0,
        Map.of(),
        0,
        0,
        null,
        0,
        error);
  }
}
