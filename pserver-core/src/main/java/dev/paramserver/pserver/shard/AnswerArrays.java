package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import java.util.List;

/**
 * The shard's pool of the arrays answers are read into: asynchronous pushes' answer rows ({@link
 * PushOutcome#lent}) and the dense blocks of pulls and of pushes' {@code return_values} read with
 * {@link #pull} and {@link #valuesAfter}. The service gives each back once the answer that is a
 * view of it was written to the transport, so answers allocate no arrays of their own.
 */
public final class AnswerArrays {
  private AnswerArrays() {}

  /**
   * Gives back an array of a {@link PushOutcome#lent}, or one {@link #pull} or {@link #valuesAfter}
   * added to its {@code lent}, of {@code shard}; nothing may read or write it afterwards.
   */
  public static void giveBack(ParameterShard shard, byte[] array) {
    shard.pushes.answerArrays.give(array);
  }

  /**
   * {@link ParameterShard#pull} whose dense blocks (those of at least 64 KiB) are views of arrays
   * of the shard's pool, added to {@code lent}: to be given back ({@link #giveBack}) once the
   * answer was written or dropped, and the answer not read after.
   */
  public static PullParametersResponse pull(
      ParameterShard shard, PullParametersRequest request, List<byte[]> lent) {
    ShardReads reads = new ShardReads(shard);
    return ShardMoves.placed(shard.gate(), () -> reads.pull(request, lent));
  }

  /** {@link ParameterShard#valuesAfter} lending its dense blocks' arrays as {@link #pull} does. */
  public static PullParametersResponse valuesAfter(
      ParameterShard shard, PushGradientsRequest push, long step, boolean rows, List<byte[]> lent) {
    ShardReads reads = new ShardReads(shard);
    return ShardMoves.placed(shard.gate(), () -> reads.valuesAfter(push, step, rows, lent));
  }
}
