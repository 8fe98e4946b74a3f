package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.harness.FaultyNetwork.Fault;
import java.util.List;
import java.util.Map;

/**
 * One run of the harness: how many trainers push concurrently and how often, when the backup
 * registers, and what the network does to the primary's calls to it.
 *
 * @param trainers trainers pushing at once, each its own thread
 * @param pushes identified pushes per trainer (steps 1..pushes), each to a random subset of the
 *     dense blocks and of a few shared sparse rows
 * @param backupJoinsAfter pushes (of all trainers) done when the backup registers; -1: it registers
 *     before the parameters are initialised
 * @param retryEvery every n-th push of a trainer is sent a second time (a trainer's retry: it must
 *     be answered as a duplicate and change nothing); 0: none
 * @param replicate the faults met by the primary's Replicate calls, in call order
 * @param fill the faults met by the primary's Fill calls (copies of the shard), in call order
 * @param holdBatch held calls are released in a shuffled order once this many are held
 * @param seed the gradients' values and the release order of held calls
 */
record Schedule(
    int trainers,
    int pushes,
    int backupJoinsAfter,
    int retryEvery,
    List<Fault> replicate,
    List<Fault> fill,
    int holdBatch,
    long seed) {

  /** The network these faults make, between the primary and its backup. */
  FaultyNetwork network() {
    return new FaultyNetwork(Map.of("Replicate", replicate, "Fill", fill), holdBatch, seed);
  }
}
