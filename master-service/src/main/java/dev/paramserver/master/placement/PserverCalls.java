package dev.paramserver.master.placement;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SlotMove;
import java.time.Duration;

/**
 * The placement coordinator's calls to the job's pservers, without gRPC: implemented in {@code
 * master.grpc}. A failed call throws a {@link ServiceException} with the reason the pserver gave
 * (ERROR_REASON_UNSPECIFIED when it gave none) and the call's status in the message; a pserver that
 * did not answer (unreachable, busy, past the deadline) throws the subclass {@link
 * PserverUnreachableException}, which the coordinator waits out instead of failing.
 */
public interface PserverCalls {
  /**
   * The status of the pserver at {@code address} ({@code GetShardStatus}), within {@code timeout}.
   *
   * @throws ServiceException when the call fails
   */
  ShardStatus status(String address, Duration timeout);

  /**
   * Asks the pserver at {@code address}, the slots' owner, to move them ({@code
   * SlotMoves.MoveOut}), within {@code timeout}.
   *
   * @throws ServiceException when the call fails
   */
  MoveOutResponse moveOut(String address, SlotMove move, Duration timeout);
}
