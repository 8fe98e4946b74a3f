/**
 * Checkpoint files: {@link dev.paramserver.pserver.checkpoint.CheckpointStore} is the door for the
 * pserver's checkpoint service and for a backup installing a primary's copy (write, load with a
 * fallback to the previous file, stream a file into a restorer). Where the pointer to each shard's
 * newest file is kept is behind {@link dev.paramserver.pserver.checkpoint.CheckpointPointers}, an
 * interface this module owns (the pserver keeps it in etcd); {@code CheckpointReader} reads a file.
 */
package dev.paramserver.pserver.checkpoint;
