package dev.paramserver.serving.replica;

import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;

/** Where a replica reads a shard's change stream from (the primary's ShardFollow service). */
public interface FollowSource {
  /** What a stream's messages are handed to, in order, on one thread. */
  interface Sink {
    /**
     * @return false to end the stream (the follower needs a new copy)
     */
    boolean accept(FollowMessage message);

    /** The stream to {@code primary} (host:port) is open. */
    void connected(String primary);
  }

  /**
   * Follows shard {@code request.index} at its primary now, handing each message to {@code sink}
   * until the stream ends, {@code sink} answers false, or the thread is interrupted.
   *
   * @throws Refused when the primary answers the call with an error before any message
   * @throws RuntimeException when the primary cannot be found or the stream fails
   */
  void follow(FollowRequest request, Sink sink);

  /**
   * The primary refused the stream before sending anything (a wrong job token, a certificate of
   * another role, not the primary, too many followers); the message is the reason as the primary
   * gave it, for example {@code "UNAUTHENTICATED: paramserver.v1.ShardFollow is internal: ..."}.
   */
  final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public Refused(String reason, Throwable cause) {
      super(reason, cause);
    }
  }

  /** Stops every stream open (shutdown). */
  void close();
}
