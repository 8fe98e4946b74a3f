package dev.paramserver.master.console;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ShardStatus;
import java.time.Duration;
import java.util.Collection;

/**
 * The pservers' status as the console reads it, without gRPC: implemented in {@code master.grpc},
 * which keeps one connection per pserver address until {@link #retainOnly} or {@link #close}
 * forgets it. Called by one sampler thread at a time.
 */
public interface PserverStatuses extends AutoCloseable {
  /**
   * The status of the pserver at {@code grpcAddress} ({@code GetShardStatus}), within {@code
   * timeout}.
   *
   * @throws ServiceException when it does not answer in time or fails (the message says why)
   */
  ShardStatus status(String grpcAddress, Duration timeout);

  /** Closes the connections to every pserver not at one of {@code grpcAddresses}. */
  void retainOnly(Collection<String> grpcAddresses);

  /** Closes every connection; a later {@link #status} opens one again. */
  @Override
  void close();
}
