package dev.paramserver.pserver.shard;

/**
 * The answer to a push.
 *
 * @param step the shard's update count after the push (for a duplicate: now)
 * @param duplicate the push had been applied before and changed nothing
 */
public record PushOutcome(long step, boolean duplicate) {}
