package dev.paramserver.errors;

/**
 * Why a call failed, for clients to branch on (never on the message text): the Java twin of the
 * proto enum {@code paramserver.v1.ErrorReason} ({@code common-proto}'s {@code errors.proto}), with
 * the same names and numbers, so that domain code names a reason without linking gRPC or protobuf.
 * On the wire the reason is a {@code google.rpc.ErrorInfo} detail whose {@code reason} is the name;
 * rpc-support's {@code RpcErrors} maps each reason to its status code. A reason added to the proto
 * is added here too (rpc-support's {@code ErrorReasonsTest} fails until it is).
 */
public enum ErrorReason {
  ERROR_REASON_UNSPECIFIED(0),
  /** The pserver shard has not been initialised: call InitParameters and FinishInit first. */
  NOT_INITIALIZED(1),
  /** A parameter or block name the server does not know. */
  UNKNOWN_PARAMETER(2),
  /** A tensor has the wrong number of elements or the wrong shape. */
  SHAPE_MISMATCH(3),
  /** An element type the server does not accept. */
  UNSUPPORTED_DTYPE(4),
  /** A gradient holds NaN or Inf. */
  NON_FINITE_GRADIENT(5),
  /** InitParameters with a different definition than the one already in place. */
  INIT_CONFLICT(6),
  /** The master is not (or no longer) the leader; find the leader through etcd. */
  NOT_LEADER(7),
  /** SetDataset with a different dataset than the one already set. */
  DATASET_CONFLICT(8),
  /** A call that needs the dataset before SetDataset was called. */
  NO_DATASET(9),
  /** A dataset glob matched no files, or a file could not be read. */
  DATASET_UNREADABLE(10),
  /** An unknown task id. */
  UNKNOWN_TASK(11),
  /** A request argument is out of range or malformed. */
  BAD_ARGUMENT(12),
  /** The server is shutting down and takes no new work. */
  SHUTTING_DOWN(13),
  /** A message or tensor exceeds a configured size limit. */
  TOO_LARGE(14),
  /** An invalid optimizer configuration. */
  BAD_OPTIMIZER(15),
  /** A synchronous step could not complete (for example a barrier timed out). */
  SYNC_ABORTED(16),
  /**
   * Replication: the sender is not (or no longer) the primary of the shard the call is about (its
   * epoch is not the shard's current one).
   */
  NOT_PRIMARY(17),
  /**
   * A windowed push's step is too far above its acknowledged_through: the trainer has more steps
   * unacknowledged than the pserver keeps (1024).
   */
  PUSH_WINDOW_EXCEEDED(18),
  /**
   * Coordination: the call needs the trainer's membership; call Join, then keep an Attend stream
   * open, first.
   */
  NOT_JOINED(19),
  /**
   * Coordination: the trainer's model (or mode) differs from the job's; the message names the first
   * difference.
   */
  MODEL_MISMATCH(20),
  /** Coordination: a live member of the job already holds the trainer id. */
  TRAINER_ID_TAKEN(21),
  /** Coordination: the job has no model yet (no trainer joined with one). */
  NO_MODEL(22),
  /**
   * A push or pull named sparse rows this pserver does not own under the routing rule
   * (docs/reference/routing.md): nothing was applied or created. ErrorInfo metadata: {@code owner}
   * (the owning pserver index of the first such row), {@code row}, {@code table}, {@code pservers}
   * (the N the server routes with) and {@code index} (this server's).
   */
  WRONG_SHARD(23),
  /**
   * Elastic placement: the push or pull names a slot of sparse rows or a dense block that moved to
   * another pserver (or is moving: the new owner takes it at {@code epoch}). Nothing was applied.
   * Resend it split by the placement of {@code epoch}, each piece to its owner with the same
   * trainer_id, session and step, {@code origin} set and a part of its own
   * (PushGradientsRequest.origin; docs/explanation/elastic.md). ErrorInfo metadata: {@code owner}
   * (the new owner's index, of the first such row or block), {@code epoch} (the placement epoch
   * that gives it), {@code index} (this server's) and {@code slot} or {@code block}.
   */
  MOVED(24),
  /**
   * A follower of a shard's change stream (ShardFollow.Follow) fell further behind than the primary
   * keeps records for it: the stream is cut off (RESOURCE_EXHAUSTED); follow again, from a copy if
   * need be.
   */
  FOLLOWER_TOO_SLOW(25),
  /**
   * Serving: the request's min_version is not reached by this serving replica within the request's
   * wait (UNAVAILABLE): retry, or ask another replica. ErrorInfo metadata: {@code shard} (the first
   * shard behind), {@code wanted}, {@code served}.
   */
  VERSION_NOT_REACHED(26),
  /**
   * The server is at one of its limits (concurrent calls, queued bytes, a stream's queue) and did
   * nothing with the request (RESOURCE_EXHAUSTED): retry the same request after the hint given as a
   * google.rpc.RetryInfo detail and as ErrorInfo metadata {@code retry_after_ms} (with {@code
   * limit}).
   */
  OVERLOADED(27);

  private final int number;

  ErrorReason(int number) {
    this.number = number;
  }

  /** The reason's number in {@code paramserver.v1.ErrorReason}. */
  public int number() {
    return number;
  }

  /**
   * The reason with {@code number}.
   *
   * @throws IllegalArgumentException for a number no reason has (one newer than this build)
   */
  public static ErrorReason forNumber(int number) {
    for (ErrorReason r : values()) {
      if (r.number == number) {
        return r;
      }
    }
    throw new IllegalArgumentException("no error reason has the number " + number);
  }

  /**
   * The reason named {@code name}, or {@link #ERROR_REASON_UNSPECIFIED} for a name this build does
   * not know (a newer server's reason): what a client reads from an ErrorInfo.
   */
  public static ErrorReason ofName(String name) {
    for (ErrorReason r : values()) {
      if (r.name().equals(name)) {
        return r;
      }
    }
    return ERROR_REASON_UNSPECIFIED;
  }
}
