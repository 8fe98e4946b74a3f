package dev.paramserver.trainer.pserver;

/**
 * One sparse table's rows of a push in flat arrays: ids {@code ids[0..count)}, row {@code k}'s
 * values at {@code values[k * width]} (width: the table's). The arrays are read, not kept, while
 * the push's requests are built.
 */
public record FlatRows(long[] ids, int count, float[] values) {}
