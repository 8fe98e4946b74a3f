package dev.paramserver.pserver.sparse;

import java.util.Arrays;

/**
 * Dense, chunked primitive storage of rows: per row its id, {@code stride} floats (the values
 * followed by each optimizer slot, side by side for locality), an update count, a word of eviction
 * metadata and the tag of the row's last writer (see {@link #writer}). The count, the metadata and
 * the tag are stored as raw float bits right after the row's floats ({@link Float#intBitsToFloat},
 * {@link Float#floatToRawIntBits}: bit for bit on the platforms the pserver runs on, x86-64 and
 * AArch64), so an update touches one run of memory a row rather than three arrays. Rows occupy
 * slots {@code [0, size)}; removing a row moves the last row into its slot, so the storage stays
 * dense (eviction samples uniformly, snapshots read a prefix).
 *
 * <p>Chunks of {@value #CHUNK_ROWS} rows are allocated as rows arrive, so growing never copies more
 * than the first chunk and the slack is at most one chunk; the first chunk itself starts small and
 * doubles, so that a table of a few rows stays small. Not thread-safe.
 */
final class RowSlab implements LongSlotIndex.Keys {
  static final int CHUNK_SHIFT = 10;
  static final int CHUNK_ROWS = 1 << CHUNK_SHIFT;
  private static final int MASK = CHUNK_ROWS - 1;
  private static final int FIRST_ROWS = 8;

  final int stride;
  // floats a row takes in its chunk: its stride, its update count, its metadata, its writer
  private final int rowFloats;
  private long[][] ids = new long[0][];
  private float[][] floats = new float[0][];
  private int size;
  private int capacity;

  RowSlab(int stride) {
    this.stride = stride;
    this.rowFloats = stride + 3;
  }

  int size() {
    return size;
  }

  @Override
  public long key(int slot) {
    return ids[slot >>> CHUNK_SHIFT][slot & MASK];
  }

  /** Appends a row with id {@code id}, zero floats, no updates; returns its slot. */
  int add(long id) {
    if (size == capacity) {
      grow();
    }
    int slot = size++;
    ids[slot >>> CHUNK_SHIFT][slot & MASK] = id;
    return slot;
  }

  /** Moves the last row into {@code slot} and drops the last slot; returns the moved row's id. */
  long removeByMovingLast(int slot) {
    int last = --size;
    if (slot != last) {
      long movedId = key(last);
      ids[slot >>> CHUNK_SHIFT][slot & MASK] = movedId;
      // the floats, the update count, the metadata and the writer
      System.arraycopy(floatChunk(last), offset(last), floatChunk(slot), offset(slot), rowFloats);
      clearFloats(last);
      return movedId;
    }
    clearFloats(last);
    return key(last);
  }

  private void clearFloats(int slot) {
    int o = offset(slot);
    Arrays.fill(floatChunk(slot), o, o + rowFloats, 0f);
  }

  /** The chunk holding the floats of {@code slot}; they start at {@link #offset}. */
  float[] floatChunk(int slot) {
    return floats[slot >>> CHUNK_SHIFT];
  }

  int offset(int slot) {
    return (slot & MASK) * rowFloats;
  }

  /**
   * Loads the first float, the update count and the metadata of {@code slot} (cache lines on their
   * way before an update needs them); the value means nothing.
   */
  int touch(int slot) {
    float[] c = floats[slot >>> CHUNK_SHIFT];
    int o = offset(slot);
    return Float.floatToRawIntBits(c[o]) + Float.floatToRawIntBits(c[o + rowFloats - 1]);
  }

  int updates(int slot) {
    return Float.floatToRawIntBits(floatChunk(slot)[offset(slot) + stride]);
  }

  void setUpdates(int slot, int value) {
    floatChunk(slot)[offset(slot) + stride] = Float.intBitsToFloat(value);
  }

  int meta(int slot) {
    return Float.floatToRawIntBits(floatChunk(slot)[offset(slot) + stride + 1]);
  }

  void setMeta(int slot, int value) {
    floatChunk(slot)[offset(slot) + stride + 1] = Float.intBitsToFloat(value);
  }

  /**
   * The writer tag of the row's last update ({@code PushGradientsRequest.writer_tag}; 0: an update
   * without one, or none since the row was added).
   */
  int writer(int slot) {
    return Float.floatToRawIntBits(floatChunk(slot)[offset(slot) + stride + 2]);
  }

  void setWriter(int slot, int value) {
    floatChunk(slot)[offset(slot) + stride + 2] = Float.intBitsToFloat(value);
  }

  /** Bytes of the arrays allocated (not only the rows in use). */
  long allocatedBytes() {
    return (long) capacity * (8 + 4L * stride + 4 + 4 + 4);
  }

  void clear() {
    ids = new long[0][];
    floats = new float[0][];
    size = 0;
    capacity = 0;
  }

  private void grow() {
    if (capacity < CHUNK_ROWS) {
      // The first chunk doubles until it is full size.
      int rows = Math.max(FIRST_ROWS, capacity * 2);
      if (ids.length == 0) {
        ids = new long[1][];
        floats = new float[1][];
        ids[0] = new long[rows];
        floats[0] = new float[rows * rowFloats];
      } else {
        ids[0] = Arrays.copyOf(ids[0], rows);
        floats[0] = Arrays.copyOf(floats[0], rows * rowFloats);
      }
      capacity = rows;
      return;
    }
    if (capacity > Integer.MAX_VALUE - CHUNK_ROWS) {
      throw new IllegalStateException("a table stripe holds at most 2^31 rows");
    }
    int c = ids.length;
    ids = Arrays.copyOf(ids, c + 1);
    floats = Arrays.copyOf(floats, c + 1);
    ids[c] = new long[CHUNK_ROWS];
    floats[c] = new float[CHUNK_ROWS * rowFloats];
    capacity += CHUNK_ROWS;
  }
}
