package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class BatchIdsTest {
  @Test
  void distinct_keepsEachIdOnce_inTheOrderOfItsFirstOccurrence() {
    BatchIds b = new BatchIds(1, 2);
    assertThat(b.distinct(new long[] {7, 3, 7, Long.MIN_VALUE, 0, 3, Long.MIN_VALUE, -1}))
        .containsExactly(7, 3, Long.MIN_VALUE, 0, -1);
    assertThat(b.distinct(new long[] {3, 3}))
        .as("nothing left from the call before")
        .containsExactly(3);
    // more ids than the scratch set holds at first
    SplittableRandom r = new SplittableRandom(1);
    long[] many = LongStream.range(0, 5000).map(i -> r.nextLong(3000)).toArray();
    assertThat(b.distinct(many)).containsExactly(LongStream.of(many).distinct().toArray());
  }

  @Test
  void of_findsABatchByItsIdsArray_andKeepsTheLatestOnly() {
    BatchIds b = new BatchIds(2, 2);
    long[] first = {1, 2, 1};
    BatchIds.Entry e = b.of(first);
    assertThat(e.distinct).containsExactly(1, 2);
    assertThat(e.local).as("each occurrence's batch-local index").containsExactly(0, 1, 0);
    assertThat(e.slots).hasDimensions(2, 2);
    assertThat(e.layouts).containsExactly(-1, -1);
    assertThat(b.of(first)).isSameAs(e);
    assertThat(b.of(new long[] {1, 2, 1})).as("another batch with the same ids").isNotSameAs(e);
    b.of(new long[] {3});
    assertThat(b.of(first)).as("dropped after two newer batches").isNotSameAs(e);
  }
}
