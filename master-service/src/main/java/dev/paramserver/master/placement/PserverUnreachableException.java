package dev.paramserver.master.placement;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;

/**
 * A call to a pserver that did not answer: unreachable, busy or past its deadline (a pserver killed
 * and restarting, whose registration may outlive it by its lease). Worth trying again later; any
 * other failed call is a {@link ServiceException} the coordinator does not retry.
 */
public final class PserverUnreachableException extends ServiceException {
  public PserverUnreachableException(ErrorReason reason, String message, Throwable cause) {
    super(reason, message, cause);
  }
}
