package dev.paramserver.pserver.shard;

/**
 * The shard's pool of the arrays asynchronous pushes' answer rows are read into ({@link
 * PushOutcome#lent}): the service gives each back once the answer that is a view of it was written
 * to the transport, so answers allocate no arrays of their own.
 */
public final class AnswerArrays {
  private AnswerArrays() {}

  /**
   * Gives back an array of a {@link PushOutcome#lent} of {@code shard}; nothing may read or write
   * it afterwards.
   */
  public static void giveBack(ParameterShard shard, byte[] array) {
    shard.pushes.answerArrays.give(array);
  }
}
