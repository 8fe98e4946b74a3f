package dev.paramserver.master.web;

import dev.paramserver.master.console.JobConsole;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * The one answer of a standby to the leader's endpoints (this package's controllers): 409 with the
 * election's state and where the leader is, its gRPC address and, when the leader answers, its HTTP
 * address (so that {@code psctl} and admin-api's client follow it).
 */
@RestControllerAdvice(basePackageClasses = NotLeaderAdvice.class)
final class NotLeaderAdvice {
  private final JobConsole console;
  private final ChannelFactory channels;

  NotLeaderAdvice(JobConsole console, ChannelFactory channels) {
    this.console = console;
    this.channels = channels;
  }

  /**
   * The body of a standby's 409.
   *
   * @param error always "not the leader"
   * @param leader always false
   * @param state the election's state on this master
   * @param identity this master's gRPC address
   * @param leaderAddress the leader's gRPC address (null: no leader known)
   * @param leaderAdminAddress the leader's HTTP address (null: unknown, or the leader did not say)
   * @param message what to do, for a person
   */
  record NotLeader(
      String error,
      boolean leader,
      String state,
      String identity,
      String leaderAddress,
      String leaderAdminAddress,
      String message) {}

  @ExceptionHandler(NotLeaderException.class)
  ResponseEntity<NotLeader> notLeader() {
    Optional<String> leader = console.election().leaderAddress();
    NotLeader body =
        new NotLeader(
            "not the leader",
            false,
            console.election().state().name(),
            console.election().identity(),
            leader.orElse(null),
            leader.map(this::adminAddressOf).orElse(null),
            leader
                .map(a -> "this master is a standby; the leader is at " + a)
                .orElse("this master is not the leader and no leader is known yet"));
    return ResponseEntity.status(HttpStatus.CONFLICT).body(body);
  }

  /** The leader's HTTP address from its GetStatus, or null when it does not answer. */
  private String adminAddressOf(String grpcAddress) {
    ManagedChannel channel = channels.forAddress(grpcAddress);
    try {
      String a =
          MasterGrpc.newBlockingStub(channel)
              .withDeadlineAfter(2, TimeUnit.SECONDS)
              .getStatus(GetStatusRequest.getDefaultInstance())
              .getAdminAddress();
      return a.isEmpty() ? null : a;
    } catch (RuntimeException e) {
      return null;
    } finally {
      channel.shutdownNow();
    }
  }
}
