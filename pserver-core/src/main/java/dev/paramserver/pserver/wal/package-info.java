/**
 * The shard's write-ahead log: {@link dev.paramserver.pserver.wal.WriteAheadLog} is the door for
 * the shard's push path (appends, one record per applied push) and for the checkpoint service
 * (opening, replaying and truncating the log); {@link dev.paramserver.pserver.wal.LogEpoch} names
 * the primary epoch a log belongs to, for replication. {@code SegmentReader} and {@code WalDisk}
 * are its parts.
 */
package dev.paramserver.pserver.wal;
