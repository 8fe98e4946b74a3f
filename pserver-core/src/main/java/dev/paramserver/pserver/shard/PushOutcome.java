package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.SparseRows;
import java.util.List;

/**
 * The answer to a push.
 *
 * @param step the shard's update count after the push (for a duplicate: now)
 * @param duplicate the push had been applied before and changed nothing
 * @param rows the push's rows after it was applied, read as they were updated, when it asked for
 *     them ({@code return_rows}) and was applied at once (asynchronous mode); null otherwise: read
 *     them with {@link ParameterShard#valuesAfter}
 * @param lent the pooled arrays {@code rows}' data are views of: hand them back with {@link
 *     AnswerArrays#giveBack} once the answer was written (empty when none)
 * @param changedOnly {@code rows} were cut to the rows another writer changed last (the push's
 *     {@code writer_tag}): the answer's {@code rows_changed_only}
 */
public record PushOutcome(
    long step, boolean duplicate, List<SparseRows> rows, List<byte[]> lent, boolean changedOnly) {
  public PushOutcome(long step, boolean duplicate) {
    this(step, duplicate, null, List.of(), false);
  }
}
