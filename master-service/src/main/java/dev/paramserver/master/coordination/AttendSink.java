package dev.paramserver.master.coordination;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ClusterMap;

/**
 * Where the answers of one Attend stream go (the gRPC adapter writes them to the response stream).
 * Calls come from several threads, never at once for one sink.
 */
public interface AttendSink {
  /** A cluster map for the trainer. */
  void send(ClusterMap map);

  /** The trainer left on purpose (it half-closed its stream): complete the stream. */
  void complete();

  /** The membership ended ({@code why}: NOT_JOINED, TRAINER_ID_TAKEN, ...): fail the stream. */
  void fail(ServiceException why);

  /**
   * This master can no longer hold the stream (it stepped down or stops): end it so that the
   * trainer reconnects, to the leader named in {@code notLeader}'s metadata when there is one.
   */
  void reconnect(ServiceException notLeader);
}
