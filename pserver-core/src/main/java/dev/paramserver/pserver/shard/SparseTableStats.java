package dev.paramserver.pserver.shard;

/**
 * The state of one sparse table, for status and metrics.
 *
 * @param name the table
 * @param rows rows held
 * @param bytes bytes of storage allocated for them (values, optimizer state, ids, index)
 * @param evictions rows dropped by the cap or expired since the table was defined or restored
 * @param admissionsRefused row pushes dropped because their id was below the admission threshold
 * @param maxRows the table's row cap ({@link Long#MAX_VALUE}: none)
 */
public record SparseTableStats(
    String name, long rows, long bytes, long evictions, long admissionsRefused, long maxRows) {}
