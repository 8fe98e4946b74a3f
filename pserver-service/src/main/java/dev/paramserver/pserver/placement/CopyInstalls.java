package dev.paramserver.pserver.placement;

import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.SlotMove;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * On a move's new owner: whether the copy of each recent move attempt was installed, for the old
 * owner's {@code AwaitCopyInstalled}, which may arrive before or after the install. Keeps the
 * latest {@value #KEPT} attempts (a pserver takes one move in at a time).
 */
final class CopyInstalls {
  static final int KEPT = 16;

  private final Map<SlotMove, CompletableFuture<MoveInResponse>> attempts =
      new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(
            Map.Entry<SlotMove, CompletableFuture<MoveInResponse>> eldest) {
          return size() > KEPT;
        }
      };

  /** Completes once the copy of {@code move} (this attempt) is installed, or its MoveIn failed. */
  synchronized CompletableFuture<MoveInResponse> of(SlotMove move) {
    return attempts.computeIfAbsent(move, m -> new CompletableFuture<>());
  }

  /** The copy of {@code move} is installed: {@code rows} rows and {@code blocks} blocks. */
  void installed(SlotMove move, long rows, int blocks) {
    of(move).complete(MoveInResponse.newBuilder().setRows(rows).setBlocks(blocks).build());
  }

  /** The MoveIn of {@code move} failed before or while installing its copy. */
  void failed(SlotMove move, RuntimeException why) {
    of(move).completeExceptionally(why);
  }
}
