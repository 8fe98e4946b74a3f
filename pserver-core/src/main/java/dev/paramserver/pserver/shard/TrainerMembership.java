package dev.paramserver.pserver.shard;

import java.util.Set;

/**
 * The live trainers of the job (in a deployment: the keys under {@code trainers/} in etcd, each
 * held by its trainer's lease, so a dead trainer drops out after the lease TTL).
 */
public interface TrainerMembership {

  /** Ids of the trainers alive now. */
  Set<String> live();

  /** Runs {@code onChange} after every change of {@link #live()}. */
  void subscribe(Runnable onChange);
}
