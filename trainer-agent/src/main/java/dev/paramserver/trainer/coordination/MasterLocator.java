package dev.paramserver.trainer.coordination;

import java.util.Optional;

/** Where the leading master is, as far as the trainer knows. */
public interface MasterLocator extends AutoCloseable {

  /** The master to call now ({@code host:port}), or empty while none is known. */
  Optional<String> current();

  /**
   * Says a call to {@code address} failed because it was unreachable or not the leader; the next
   * {@link #current()} looks elsewhere.
   *
   * @param leaderHint the leader's address the failed master named, or null
   */
  void failed(String address, String leaderHint);

  /** Where the masters are looked for, for log lines ("under /paramserver/j/master/addr"). */
  String describe();

  @Override
  void close();
}
