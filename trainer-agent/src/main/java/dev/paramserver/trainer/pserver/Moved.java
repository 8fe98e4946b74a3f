package dev.paramserver.trainer.pserver;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.rpc.RpcErrors;
import java.util.Map;
import java.util.Optional;

/**
 * A pserver's MOVED answer (errors.proto): the request names a slot or block that moved, or is
 * moving, to pserver {@code owner} at placement epoch {@code epoch}; nothing of it was applied.
 *
 * @param refusedBy the index of the pserver that refused
 * @param owner the new owner of the first slot or block refused (-1 when not said)
 * @param epoch the placement epoch that gives it (0 when not said)
 */
public record Moved(int refusedBy, int owner, long epoch) {

  /** The MOVED answer {@code failure} carries, or empty for any other failure. */
  public static Optional<Moved> of(int refusedBy, Throwable failure) {
    if (RpcErrors.reasonOf(failure) != ErrorReason.MOVED) {
      return Optional.empty();
    }
    Map<String, String> meta = RpcErrors.metadataOf(failure);
    return Optional.of(
        new Moved(refusedBy, (int) number(meta, "owner", -1), number(meta, "epoch", 0)));
  }

  private static long number(Map<String, String> meta, String key, long absent) {
    String v = meta.get(key);
    try {
      return v == null ? absent : Long.parseLong(v);
    } catch (NumberFormatException e) {
      return absent;
    }
  }

  @Override
  public String toString() {
    return "pserver "
        + refusedBy
        + " answered MOVED (to pserver "
        + owner
        + " at placement epoch "
        + epoch
        + ")";
  }
}
