package dev.paramserver.pserver.sparse;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link RowSlab} keeps each row's update count and metadata as raw bits beside its floats: every
 * int comes back bit for bit (NaN patterns and the saturated count included), and neither a row's
 * floats nor its neighbours' are touched by them, also when the last row moves into a removed one.
 */
class RowSlabTest {
  private static final int[] AWKWARD =
      new int[] {
        0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0x7F800001, 0xFFC00001, 0x7FC00000
      };

  @Test
  void updatesAndMeta_roundTripBitForBit_besideTheRowsFloats() {
    int stride = 3;
    RowSlab slab = new RowSlab(stride);
    int rows = RowSlab.CHUNK_ROWS + 17;
    for (int r = 0; r < rows; r++) {
      int slot = slab.add(1000L + r);
      float[] chunk = slab.floatChunk(slot);
      int o = slab.offset(slot);
      for (int k = 0; k < stride; k++) {
        chunk[o + k] = r * 10f + k;
      }
      slab.setUpdates(slot, AWKWARD[r % AWKWARD.length]);
      slab.setMeta(slot, AWKWARD[(r + 3) % AWKWARD.length]);
    }
    for (int r = 0; r < rows; r++) {
      assertRow(slab, r, r, stride);
    }

    // the last row moves into slot 5: floats, count and metadata with it
    long moved = slab.removeByMovingLast(5);
    assertThat(moved).isEqualTo(1000L + rows - 1);
    assertThat(slab.key(5)).isEqualTo(moved);
    assertRow(slab, 5, rows - 1, stride);
    assertRow(slab, 4, 4, stride);
    assertRow(slab, 6, 6, stride);

    // a slot added again starts with zero floats, count and metadata
    int again = slab.add(7L);
    assertThat(again).isEqualTo(rows - 1);
    assertThat(slab.updates(again)).isZero();
    assertThat(slab.meta(again)).isZero();
    assertThat(slab.floatChunk(again)[slab.offset(again)]).isZero();
  }

  private static void assertRow(RowSlab slab, int slot, int r, int stride) {
    float[] chunk = slab.floatChunk(slot);
    int o = slab.offset(slot);
    for (int k = 0; k < stride; k++) {
      assertThat(chunk[o + k]).as("row %d float %d", r, k).isEqualTo(r * 10f + k);
    }
    assertThat(slab.updates(slot)).as("row %d updates", r).isEqualTo(AWKWARD[r % AWKWARD.length]);
    assertThat(slab.meta(slot)).as("row %d meta", r).isEqualTo(AWKWARD[(r + 3) % AWKWARD.length]);
  }
}
