/**
 * Sparse tables in primitive storage: {@link dev.paramserver.pserver.sparse.SparseRowStore} (one
 * table's rows, striped) is the door for the shard; {@link
 * dev.paramserver.pserver.sparse.SparseSettings} and {@link
 * dev.paramserver.pserver.sparse.TableSettings} for the configuration (caps, budget, eviction,
 * admission). The slabs, indexes, sketches and policies behind them are package-private or used by
 * the store alone.
 */
package dev.paramserver.pserver.sparse;
