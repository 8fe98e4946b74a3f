"""Embedding tables on the pservers: Embedding and EmbeddingBag modules whose rows live in the job's
sparse tables (created lazily by the pservers, updated there by the table's optimizer), for tables
larger than one machine.

A lookup fetches the batch's distinct rows once (RowCache: bounded, read-my-writes, prefetch of the
next batch on a helper thread) into a leaf tensor; autograd carries the gradient to it, and the
Trainer's step() pushes the rows' gradients as sparse rows of that step (the same step identity as
the dense gradients: exactly-once).

    emb = Embedding(None, 16, optimizer_config=optimizer("adagrad", 0.05))  # unbounded ids
    model = nn.Sequential(...)  # uses emb; Trainer(client, model).join() declares its table
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple

import numpy as np
import numpy.typing as npt
import torch
from torch import nn
from torch.nn import functional as F

from .._stubs import optimizer_pb2, pb, tensor_pb2
from ..client import Client, FloatArray, optimizer
from ..errors import CallOrderError

__all__ = ["Embedding", "EmbeddingBag", "RowCache", "SparseModule"]

IdArray = npt.NDArray[np.int64]


class Writes(Protocol):
    """What the cache asks the trainer: the rows unanswered pushes carry, and to wait for them."""

    def in_flight_ids(self, table: str) -> IdArray: ...
    def flush(self) -> None: ...


class _Table:
    """The cached rows of one table, as arrays sorted by id (lookups are one searchsorted, no
    per-row Python): ids, values [n, width], the batch each was read for and its last use."""

    def __init__(self) -> None:
        self.ids: IdArray = np.zeros(0, np.int64)
        self.values: FloatArray = np.zeros((0, 0), np.float32)
        self.read: IdArray = np.zeros(0, np.int64)
        self.used: IdArray = np.zeros(0, np.int64)

    def find(self, ids: IdArray, oldest: int) -> Tuple[IdArray, "npt.NDArray[np.bool_]"]:
        """(positions, found) of sorted distinct `ids`: found where cached and read at `oldest` or later."""
        if not len(self.ids):
            return np.zeros(len(ids), np.int64), np.zeros(len(ids), bool)
        at = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        found = (self.ids[at] == ids) & (self.read[at] >= oldest)
        return at, found

    def keep(self, mask: "npt.NDArray[np.bool_]") -> None:
        self.ids, self.values, self.read, self.used = self.ids[mask], self.values[mask], self.read[mask], self.used[mask]

    def add(self, ids: IdArray, values: FloatArray, batch: int, oldest: int, max_rows: int) -> None:
        """Adds (or replaces) sorted distinct rows; drops rows older than `oldest`, then the least
        recently used beyond max_rows."""
        if len(self.ids):
            self.keep((self.read >= oldest) & ~np.isin(self.ids, ids, assume_unique=True))
        width = values.shape[1] if values.ndim == 2 else 0
        if not len(self.ids) or self.values.shape[1] != width:
            self.values = self.values.reshape(0, width)
        ids_all = np.concatenate([self.ids, ids])
        order = np.argsort(ids_all, kind="stable")
        self.ids = ids_all[order]
        self.values = np.concatenate([self.values, values])[order]
        self.read = np.concatenate([self.read, np.full(len(ids), batch, np.int64)])[order]
        self.used = np.concatenate([self.used, np.full(len(ids), batch, np.int64)])[order]
        if len(self.ids) > max_rows:
            self.keep(self.used >= np.sort(self.used)[len(self.ids) - max_rows])
            if len(self.ids) > max_rows:  # ties at the cut: keep the first max_rows
                self.keep(np.arange(len(self.ids)) < max_rows)

    def drop(self, ids: IdArray) -> None:
        if len(self.ids) and len(ids):
            self.keep(~np.isin(self.ids, ids))


class RowCache:
    """The rows a trainer keeps between lookups. Training thread, plus one helper thread that
    prefetches.

    - **Read once per batch.** A lookup pulls the rows it lacks in one request per owning pserver.
    - **Read-my-writes.** A row that a push still unanswered carries is read only after that push is
      acknowledged (the lookup waits for it); a cached row a later push carried is dropped.
    - **Staleness bound.** A row read during batch b serves batches up to b + staleness (0: the
      batch it was read for only; other trainers' updates are seen at the next batch).
    - **Bounded.** Past max_rows the rows least recently used are dropped.

    Rows are kept per table in arrays sorted by id, so that a batch's thousands of rows cost a few
    numpy calls, not a Python loop each.
    """

    def __init__(self, client: Client, writes: Writes, staleness: int = 0, max_rows: int = 1 << 20) -> None:
        if staleness < 0 or max_rows <= 0:
            raise ValueError("RowCache needs staleness >= 0 and max_rows > 0, got %d and %d" % (staleness, max_rows))
        self.client, self.writes, self.staleness, self.max_rows = client, writes, staleness, max_rows
        self.batch = 0
        self.pulled_rows = self.pulls = self.hits = self.misses = 0  # misses: rows a lookup waited for
        self._tables: Dict[str, _Table] = {}
        self._lock = threading.Lock()
        # one thread per table's pull at a time (a model with two tables reads both at once)
        self._helper = concurrent.futures.ThreadPoolExecutor(2, "paramserver-prefetch")
        self._prefetching: List[concurrent.futures.Future[FloatArray]] = []
        # pushes sent while prefetches were under way: (sequence, table, ids); a prefetch drops the
        # rows a push sent after it started carries (it may have read them before the push)
        self._seq = 0
        self._writes: List[Tuple[int, str, IdArray]] = []

    def next_batch(self) -> None:
        """A new batch starts: rows older than the staleness bound no longer serve."""
        self.batch += 1

    def _settle(self) -> None:
        for f in self._prefetching:
            f.result()
        self._prefetching = []
        with self._lock:
            self._writes = []

    def _table(self, table: str) -> _Table:
        t = self._tables.get(table)
        if t is None:
            t = self._tables[table] = _Table()
        return t

    def __len__(self) -> int:
        return sum(len(t.ids) for t in self._tables.values())

    def written(self, table: str, ids: IdArray) -> None:
        """A push carrying these rows was sent: their cached values are dropped, and the prefetches
        under way (which may have read them before the push) will not cache them."""
        ids = np.asarray(ids, np.int64)
        with self._lock:
            self._seq += 1
            self._table(table).drop(ids)
            if any(not f.done() for f in self._prefetching):
                self._writes.append((self._seq, table, ids))

    def returned(self, table: str, ids: IdArray, values: FloatArray) -> None:
        """Rows a push's answer brought back (their values after the push): cached as read now."""
        order = np.argsort(ids, kind="stable")
        with self._lock:
            self._table(table).add(ids[order], values[order], self.batch, self.batch - self.staleness,
                                   self.max_rows)

    def _pull(self, table: str, ids: IdArray, batch: int, since: Optional[int] = None) -> FloatArray:
        """Pulls rows and caches them as read for `batch`; since (a prefetch): the write sequence
        when it started, whose later pushes' rows are not cached."""
        values = self.client.pull_rows(table, ids)
        with self._lock:
            self.pulls += 1
            self.pulled_rows += len(ids)
            keep_ids, keep = ids, values
            later = [w for seq, t, w in self._writes if since is not None and seq > since and t == table]
            if later:
                mask = ~np.isin(ids, np.concatenate(later))
                keep_ids, keep = ids[mask], values[mask]
            self._table(table).add(keep_ids, keep, batch, self.batch - self.staleness, self.max_rows)
        return values

    def prefetch(self, table: str, ids: IdArray) -> None:
        """Starts pulling, on the helper thread, the rows of `ids` the cache lacks and no unanswered
        push carries (those are read after the push, at the lookup), for the next batch."""
        wanted = np.unique(np.asarray(ids, np.int64))
        carried = self.writes.in_flight_ids(table)
        if len(carried):
            wanted = wanted[~np.isin(wanted, carried)]
        with self._lock:
            _, found = self._table(table).find(wanted, self.batch + 1 - self.staleness)
        missing = wanted[~found]
        if len(missing):
            self._prefetching.append(self._helper.submit(self._pull, table, missing, self.batch + 1, self._seq))

    def rows(self, table: str, ids: IdArray) -> FloatArray:
        """The values of the distinct rows `ids` ([len(ids), width]), read-my-writes."""
        self._settle()
        ids = np.asarray(ids, np.int64)
        carried = self.writes.in_flight_ids(table)
        if len(carried) and np.isin(ids, carried).any():
            self.writes.flush()  # read-my-writes: the push carrying them is acknowledged first
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        with self._lock:
            t = self._table(table)
            at, found = t.find(sorted_ids, self.batch - self.staleness)
            width = t.values.shape[1] if t.values.ndim == 2 and len(t.ids) else 0
            out = t.values[at[found]] if found.any() else None
            t.used[at[found]] = self.batch
        missing = sorted_ids[~found]
        self.hits += int(found.sum())
        self.misses += len(missing)
        pulled = self._pull(table, missing, self.batch) if len(missing) else None
        if pulled is not None:
            width = pulled.shape[1]
        elif out is None:
            width = self.client.table_width(table)
        result = np.empty((len(ids), width), np.float32)
        if out is not None:
            result[order[found]] = out
        if pulled is not None:
            result[order[~found]] = pulled
        return result

    def close(self) -> None:
        self._helper.shutdown(cancel_futures=True)


class SparseModule(nn.Module):
    """A module with a sparse table on the pservers: Trainer declares its ParameterSpec at join,
    attaches its RowCache, and pushes the gradients of the rows its lookups read."""

    def __init__(self, num_embeddings: Optional[int], embedding_dim: int, table: Optional[str],
                 optimizer_config: Optional[optimizer_pb2.OptimizerConfig], init_stddev: float,
                 padding_idx: Optional[int]) -> None:
        super().__init__()
        if embedding_dim <= 0:
            raise ValueError("embedding_dim must be positive, got %d" % embedding_dim)
        if num_embeddings is not None and num_embeddings <= 0:
            raise ValueError("num_embeddings must be positive or None (unbounded ids), got %d" % num_embeddings)
        if padding_idx is not None and padding_idx < 0:
            if num_embeddings is None:
                raise ValueError("a negative padding_idx needs num_embeddings")
            padding_idx += num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.table, self.init_stddev = table, init_stddev
        self.optimizer_config = optimizer_config or optimizer("sgd", 0.1)
        self._cache: Optional[RowCache] = None
        self._read: List[Tuple[IdArray, torch.Tensor]] = []  # this step's lookups: ids, leaf rows

    def spec(self) -> pb.ParameterSpec:
        if self.table is None:
            raise CallOrderError("the sparse module has no table name: pass table= or give it to a Trainer")
        return pb.ParameterSpec(name=self.table, shape=[self.num_embeddings or 0, self.embedding_dim],
                                dtype=tensor_pb2.FLOAT32, sparse=True, optimizer=self.optimizer_config,
                                init_stddev=self.init_stddev)

    def attach(self, cache: RowCache) -> None:
        self._cache = cache

    def _check(self, ids: torch.Tensor) -> IdArray:
        if ids.dtype not in (torch.int64, torch.int32):
            raise TypeError("%s ids must be an integer tensor, got %s" % (type(self).__name__, ids.dtype))
        flat: IdArray = ids.detach().reshape(-1).to("cpu", torch.int64).numpy()
        if self.num_embeddings is not None and flat.size and (flat.min() < 0 or flat.max() >= self.num_embeddings):
            raise IndexError("%s %r: id out of range [0, %d): %d" % (
                type(self).__name__, self.table, self.num_embeddings,
                int(flat.min()) if flat.min() < 0 else int(flat.max())))
        return flat

    def prefetch(self, ids: torch.Tensor) -> None:
        """Starts pulling the rows of the next batch's `ids` while this batch trains."""
        if self._cache is not None and self.table is not None:
            flat = self._check(ids)
            self._cache.prefetch(self.table, flat[flat != self.padding_idx] if self.padding_idx is not None else flat)

    def _lookup(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, Optional[int]]:
        """(rows [U (+1), dim] (a leaf that collects the gradient), local indexes shaped as ids, the
        local padding index or None): the batch's distinct rows read once."""
        if self._cache is None or self.table is None:
            raise CallOrderError("%s used before Trainer.join(): the trainer attaches its table" % type(self).__name__)
        flat = self._check(ids)
        uniq, inverse = np.unique(flat, return_inverse=True)
        pad: Optional[int] = None
        if self.padding_idx is not None:
            keep = uniq != self.padding_idx
            if not keep.all():
                pad = int(np.flatnonzero(~keep)[0])
        wanted = uniq if pad is None else np.delete(uniq, pad)
        values = torch.from_numpy(self._cache.rows(self.table, wanted))
        leaf = values.requires_grad_(self.training and torch.is_grad_enabled())
        if leaf.requires_grad:
            self._read.append((wanted, leaf))
        # on another device (CUDA), the rows cross from host memory (and their gradients back)
        rows = leaf if ids.device.type == "cpu" else leaf.to(ids.device)
        local = torch.from_numpy(inverse.reshape(ids.shape).astype(np.int64)).to(ids.device)
        if pad is not None:  # the padding row: zeros, no gradient, after the others
            rows = torch.cat([rows, torch.zeros(1, self.embedding_dim, device=rows.device)])
            local = torch.where(local == pad, torch.full_like(local, len(wanted)),
                                local - (local > pad).to(local.dtype))
            pad = len(wanted)
        return rows, local, pad

    def gradients(self) -> Optional[Tuple[IdArray, FloatArray]]:
        """The rows' gradients of this step's lookups (ids may repeat: the client sums them); clears."""
        read, self._read = self._read, []
        ids = [i for i, leaf in read if leaf.grad is not None]
        grads = [leaf.grad.numpy() for _, leaf in read if leaf.grad is not None]
        if not ids:
            return None
        return np.concatenate(ids), np.concatenate(grads).astype(np.float32, copy=False)

    def _save_to_state_dict(self, destination: Dict[str, Any], prefix: str, keep_vars: bool) -> None:
        """`weight` [num_embeddings, dim] as nn.Embedding's, read from the pservers (a bounded table);
        an unbounded one has no weight to export (the job's checkpoint or model export holds it)."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if self.num_embeddings is not None and self._cache is not None and self.table is not None:
            client, n, chunk = self._cache.client, self.num_embeddings, 65536
            parts = [client.pull_rows(self.table, np.arange(s, min(n, s + chunk), dtype=np.int64))
                     for s in range(0, n, chunk)]
            weight = torch.from_numpy(np.concatenate(parts))
            if self.padding_idx is not None:
                weight[self.padding_idx] = 0
            destination[prefix + "weight"] = weight

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, local_metadata: Dict[str, Any],
                              strict: bool, missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str]) -> None:
        if prefix + "weight" in state_dict:
            error_msgs.append("%s%s: the rows live on the pservers and are not loaded from a state_dict (a "
                              "job starts its tables from its initializer or a checkpoint)" % (prefix, "weight"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        return "%s, %d, table=%r%s" % (self.num_embeddings, self.embedding_dim, self.table,
                                       "" if self.padding_idx is None else ", padding_idx=%d" % self.padding_idx)


class Embedding(SparseModule):
    """nn.Embedding with its rows on the pservers: `num_embeddings` None for unbounded ids (any
    int64); `table` the sparse table's name (default: the module's name in the model); the
    optimizer runs on the pservers (`optimizer_config`, default SGD 0.1); new rows start normal
    with `init_stddev` (0: zeros); `padding_idx` gives zeros and takes no gradient."""

    def __init__(self, num_embeddings: Optional[int], embedding_dim: int, padding_idx: Optional[int] = None, *,
                 table: Optional[str] = None, optimizer_config: Optional[optimizer_pb2.OptimizerConfig] = None,
                 init_stddev: float = 0.01) -> None:
        super().__init__(num_embeddings, embedding_dim, table, optimizer_config, init_stddev, padding_idx)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        rows, local, pad = self._lookup(ids)
        return F.embedding(local, rows, padding_idx=pad)


class EmbeddingBag(SparseModule):
    """nn.EmbeddingBag with its rows on the pservers: mode "sum" or "mean" over each bag (a row of
    a 2-D input, or 1-D input cut by `offsets`), `per_sample_weights` (mode "sum"), `padding_idx`
    excluded from the bags (a bag of padding only is zeros)."""

    def __init__(self, num_embeddings: Optional[int], embedding_dim: int, mode: str = "mean",
                 padding_idx: Optional[int] = None, *, table: Optional[str] = None,
                 optimizer_config: Optional[optimizer_pb2.OptimizerConfig] = None, init_stddev: float = 0.01) -> None:
        if mode not in ("sum", "mean"):
            raise ValueError("EmbeddingBag mode must be 'sum' or 'mean', got %r" % mode)
        super().__init__(num_embeddings, embedding_dim, table, optimizer_config, init_stddev, padding_idx)
        self.mode = mode

    def forward(self, ids: torch.Tensor, offsets: Optional[torch.Tensor] = None,
                per_sample_weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        if per_sample_weights is not None and self.mode != "sum":
            raise ValueError("per_sample_weights needs mode 'sum' (as nn.EmbeddingBag), the mode is %r" % self.mode)
        rows, local, pad = self._lookup(ids)
        return F.embedding_bag(local, rows, offsets, mode=self.mode, per_sample_weights=per_sample_weights,
                               padding_idx=pad)
