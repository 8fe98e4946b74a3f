"""PyTorch integration: a Trainer registers an nn.Module's parameters with the job (the optimizer
runs on the pservers), pulls them before forward (written into the parameters in place), pushes
their gradients after backward, and iterates the master's tasks as (features, labels) batches."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("paramserver.torch needs PyTorch: pip install 'paramserver[torch]' (or torch; on "
                      "Debian, apt-get install python3-torch): %s" % e) from e

import torch.utils.data

from .. import recordio
from .._stubs import example_pb2, optimizer_pb2
from ..admin import TOKEN_ENV
from ..client import ASYNC, BLOCK_SIZE, Client, FloatArray, PendingPush, dense_spec, ma, optimizer
from ..errors import CallOrderError, ModelMismatch
from ..status import Progress, StatusServer, advertised_host
from .data import Decoder, TaskBatch, TaskDataset, loop as _loop, shuffled
from .embedding import Embedding, EmbeddingBag, RowCache, SparseModule

T = TypeVar("T")
_NO_IDS = np.zeros(0, np.int64)
__all__ = ["Trainer", "decode", "decode_sparse", "Embedding", "EmbeddingBag", "lookahead", "TaskBatch",
           "TaskDataset"]


@dataclass
class _Window:
    """The loss window being filled (a LossWindow once closed)."""

    records: int = 0
    loss_sum: float = 0.0
    batches: int = 0
    ended_ms: int = 0


class Trainer:
    """Trains `module` (float32 parameters) through `client` (a paramserver.Client).

        trainer = Trainer(client, module, optimizer("adam", 0.01)).join()
        for x, y in trainer.batches(batch_size=64):
            loss = module.loss(module(x), y)
            module.zero_grad(); loss.backward()
            trainer.step(loss)          # push the gradients, take the new values in

    optimizer_config: the dense parameters' optimizer (run on the pservers; default SGD 0.1);
    param_groups: as torch.optim's, [{"params": module.head.parameters(), "optimizer": optimizer(...)},
    ...], each group's parameters on the group's optimizer (the others on optimizer_config).
    A module on another device than the CPU (CUDA) trains through host copies: each parameter has a
    float32 copy in host memory that pulls and pushes use; new values are copied to the device after
    each step, gradients to the host before it (host_copy=True takes that path for CPU modules too).
    Progress (`trainer.progress`) is served on GET /admin/status of `status_port` (0: a free port)
    when the job's admin token is known (`admin_token`, or $PARAMSERVER_ADMIN_TOKEN): the master's
    console and `psctl status` show it as a Java trainer's (paramserver.status).
    """

    def __init__(self, client: Client, module: torch.nn.Module,
                 optimizer_config: Optional[optimizer_pb2.OptimizerConfig] = None, block_size: int = BLOCK_SIZE,
                 mode: int = ASYNC, staleness: int = 0, seed: int = 0, row_staleness: int = 0,
                 max_cached_rows: int = 1 << 20, param_groups: Optional[Sequence[Dict[str, Any]]] = None,
                 host_copy: Optional[bool] = None, admin_token: Optional[str] = None,
                 status_port: int = 0) -> None:
        self.client, self.module, self.seed = client, module, seed
        # sparse tables (Embedding, EmbeddingBag): named after the module unless given a name
        self.sparse: List[SparseModule] = []
        for name, m in module.named_modules():
            if isinstance(m, SparseModule):
                m.table = m.table or name or "embedding"
                self.sparse.append(m)
        tables = [m.table for m in self.sparse]
        if len(set(tables)) != len(tables):
            raise ValueError("two sparse modules name one table: %s (pass table= to tell them apart)" % tables)
        self.row_staleness, self.max_cached_rows = row_staleness, max_cached_rows
        self.rows: Optional[RowCache] = None
        self._in_flight: Dict[str, np.ndarray] = {}
        self.params = dict(module.named_parameters())
        # the float32 host tensor pulls write into and pushes read: the parameter itself on the CPU,
        # a copy in host memory for a parameter on another device (or with host_copy)
        self.host: Dict[str, torch.Tensor] = {}
        for name, p in self.params.items():
            if p.dtype != torch.float32:
                raise ValueError("parameter %r must be float32, is %s" % (name, p.dtype))
            if p.device.type == "cpu" and not host_copy:
                if not p.is_contiguous():
                    raise ValueError("parameter %r must be a contiguous tensor" % name)
                self.host[name] = p.detach()
            else:
                self.host[name] = torch.empty(p.shape, dtype=torch.float32)
        self._moved = [n for n, p in self.params.items() if p.device.type != "cpu" or host_copy]
        configs = _group_configs(self.params, param_groups, optimizer_config or optimizer())
        self.specs = [dense_spec(n, p.shape, block_size, configs[n])
                      for n, p in self.params.items()] + [m.spec() for m in self.sparse]
        self.mode, self.staleness = mode, staleness
        self.values: Optional[Dict[str, FloatArray]] = None
        self.progress = Progress()
        self.records_done = 0
        self._token = admin_token if admin_token is not None else os.environ.get(TOKEN_ENV, "")
        self._status_port = status_port
        self.status: Optional[StatusServer] = None
        self._size = 0
        self._windows: List[ma.LossWindow] = []
        self._window = _Window()
        self._pending: Optional[PendingPush] = None

    def join(self, adopt: bool = False) -> "Trainer":
        """Joins the job with the module's specs (adopt: with none, taking the job's model, which must
        have the module's names and shapes), initialises the pservers if this trainer is granted the
        init lock (with the module's own initial values), then pulls the job's values into the module.
        A module that does not match the job's model raises ModelMismatch with the master's message."""
        endpoint = ""
        if self._token and self.status is None:
            self.status = StatusServer(self._token, lambda: self.client.trainer_id, self.progress, self._status_port)
            host = advertised_host(self.client.masters[0])
            endpoint = "%s:%d" % ("[%s]" % host if ":" in host else host, self.status.port)
        self.progress.state = "INITIALISING"
        try:
            joined = self.client.join([] if adopt else self.specs, self.mode, self.staleness, endpoint=endpoint)
        except BaseException:
            self.close()  # a refused join (ModelMismatch, ...) leaves no endpoint behind
            raise
        job = {p.name: list(p.shape) for p in joined.parameters if not p.sparse}
        mine = {n: list(p.shape) for n, p in self.params.items()}
        if job != mine:
            diff = sorted(set(job) ^ set(mine)) or [n for n in mine if mine[n] != job[n]]
            raise ModelMismatch("the module's parameters %s differ from the job's %s (first: %s)"
                                % (mine, job, diff[0]), "MODEL_MISMATCH")
        # flat numpy views of the host tensors: pulls write into the module (or its host copy) in place
        self._to_host()
        values: Dict[str, FloatArray] = {n: h.view(-1).numpy() for n, h in self.host.items()}
        self.values = values
        self.client.init_parameters(values)
        self.client.pull(values)
        self._to_device()
        self.rows = RowCache(self.client, self, self.row_staleness, self.max_cached_rows)
        for m in self.sparse:
            m.attach(self.rows)
        return self

    @property
    def tasks_done(self) -> int:
        """Tasks trained and reported finished by this trainer."""
        return self.progress.tasks_done

    @tasks_done.setter
    def tasks_done(self, n: int) -> None:
        self.progress.tasks_done = n

    def close(self) -> None:
        """Stops the status endpoint (the Client is closed by its owner)."""
        self.progress.state = "STOPPED" if self.progress.state != "FINISHED" else "FINISHED"
        if self.status is not None:
            self.status.close()
            self.status = None

    def _to_host(self) -> None:
        with torch.no_grad():
            for n in self._moved:
                self.host[n].copy_(self.params[n].detach())

    def _to_device(self) -> None:
        """Copies the host tensors' new values to the parameters on another device."""
        with torch.no_grad():
            for n in self._moved:
                self.params[n].copy_(self.host[n], non_blocking=False)

    def dataset(self, batch_size: int, passes: Optional[int] = None, sparse: bool = False,
                decode: Optional[Decoder] = None) -> TaskDataset:
        """An IterableDataset of (x, y, TaskBatch) batches of the master's tasks, each task read once
        (by the process or DataLoader worker that took it from the master under this trainer's id);
        pass it to DataLoader(dataset, batch_size=None, num_workers=...) and train through
        loop(loader), which reports each task finished after its last batch is trained. sparse:
        decode_sparse's ids; decode: your own records to (x, y). ASYNC jobs."""
        self._require("dataset")
        if self.mode != ASYNC:
            raise ValueError("trainer.dataset() needs an ASYNC job (SYNC and BOUNDED_STALENESS trainers keep pace "
                             "with the others between tasks: use trainer.batches())")
        c = self.client
        return TaskDataset(c.masters, c.trainer_id, batch_size, passes,
                           decode or (decode_sparse if sparse else None), self.seed, c.tls, c.timeout_s,
                           c.failover_s)

    def data_loader(self, batch_size: int, num_workers: int = 0, passes: Optional[int] = None, sparse: bool = False,
                    decode: Optional[Decoder] = None, **kwargs: Any) -> "torch.utils.data.DataLoader[Any]":
        """A DataLoader over dataset(): `num_workers` spawned worker processes (each reads and decodes
        its own tasks), batches made by the dataset; kwargs go to DataLoader (pin_memory=True for a
        CUDA module, prefetch_factor, ...). Train through loop()."""
        return torch.utils.data.DataLoader(
            self.dataset(batch_size, passes, sparse, decode), batch_size=None, num_workers=num_workers,
            multiprocessing_context="spawn" if num_workers else None, **kwargs)

    def loop(self, loader: Iterable[Tuple[torch.Tensor, torch.Tensor, TaskBatch]], prefetch: bool = False
             ) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        """(x, y) of a DataLoader over dataset(): step after each; a task is reported finished (with
        its loss windows) once its last batch was stepped; tasks not finished when the loop ends
        early are handed back. prefetch: the sparse modules read the next batch's rows while this
        one trains (as batches(prefetch=True))."""
        self._require("loop")
        return _loop(self, loader, prefetch)

    def in_flight(self, table: str) -> "set[int]":
        """The rows of `table` the unanswered push carries (read-my-writes waits for it)."""
        return set(self.in_flight_ids(table).tolist())

    def in_flight_ids(self, table: str) -> "np.ndarray[Any, np.dtype[np.int64]]":
        """in_flight as a sorted int64 array."""
        return self._in_flight.get(table, _NO_IDS)

    def _require(self, method: str) -> Dict[str, FloatArray]:
        if self.values is None:
            raise CallOrderError("%s() before join(): call trainer.join() first" % method)
        return self.values

    def pull(self) -> None:
        """Writes the job's current values into the module's parameters."""
        values = self._require("pull")
        self.flush()
        self.client.pull(values)
        self._to_device()

    def step(self, loss: Optional[float | torch.Tensor] = None) -> None:
        """Pushes the parameters' gradients as the next step and writes new values into the module.
        ASYNC: the push is answered with the values while the next batch computes; they are written
        before this returns next time (one batch of lag, as the Java trainer's pipeline-lag), and at
        the end of each task. SYNC/BOUNDED_STALENESS: a pull after the step. A parameter without a
        gradient pushes zeros. `loss` (the batch's mean loss) goes to the master's run tracking."""
        values = self._require("step")
        grads = {n: (p.grad.detach().reshape(-1).to("cpu").numpy() if p.grad is not None
                     else np.zeros(p.numel(), np.float32))
                 for n, p in self.params.items()}
        sparse: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        for m in self.sparse:
            g = m.gradients()
            if g is not None and m.table is not None:
                sparse[m.table] = g
        self.flush()  # the previous step is acknowledged before this one is sent (exactly-once)
        # copies the gradients; the answers bring the pushed rows back for the row cache
        self._pending = self.client.push_async(grads, sparse=sparse, into=values,
                                               return_rows=self.rows is not None and bool(sparse))
        if self.rows is not None:
            for table, (ids, _) in sparse.items():
                self.rows.written(table, ids)
            self._in_flight = {table: np.unique(ids) for table, (ids, _) in sparse.items()}
            self.rows.next_batch()
        if self.mode != ASYNC:
            self.flush()
        self.progress.batch(self._size, None if loss is None else float(loss))
        if loss is not None and self.client.loss_every_records:
            w = self._window
            w.records += self._size
            w.loss_sum += float(loss) * self._size
            w.batches += 1
            w.ended_ms = int(time.time() * 1000)
            if w.records >= self.client.loss_every_records:
                self._close_window()

    def flush(self) -> None:
        """Waits for the push in flight and writes its values into the module."""
        pending, self._pending = self._pending, None
        if pending is not None:
            with torch.no_grad():
                self.client.complete(pending)
            self._to_device()
            if self.rows is not None:
                for table, (ids, rows) in pending.rows().items():
                    self.rows.returned(table, ids, rows)
        self._in_flight = {}

    def _tasks(self, passes: Optional[int], features: Optional[int],
               sparse: bool = False) -> Iterator[Tuple[ma.Task, torch.Tensor, torch.Tensor]]:
        """(task, features, labels) of each task, read, decoded and shuffled."""
        tasks = self.client.tasks()
        for task in tasks:
            if passes is not None and getattr(task, "pass") >= passes:
                tasks.close()  # hands the task back
                return
            try:
                records = [r for c in task.chunks for r in recordio.read_chunk(c.path, c.offset, c.length)]
                x, y = decode_sparse(records) if sparse else decode(records)
            except (OSError, recordio.CorruptRecordError) as e:
                self.client.task_failed(task, "cannot read task %d: %s" % (task.id, e))
                continue
            if features is not None and x.shape[1:] != (features,):
                raise ValueError("examples have %s features, the model expects %d" % (x.shape[1:], features))
            order = shuffled(len(y), self.seed ^ (task.id * 31 + task.epoch))
            yield task, torch.from_numpy(x[order]), torch.from_numpy(y[order])

    def _close_window(self) -> None:
        w = self._window
        if w.records:
            self._windows.append(ma.LossWindow(records=w.records, loss_sum=w.loss_sum, batches=w.batches,
                                               ended_ms=w.ended_ms))
        self._window = _Window()

    def batches(self, batch_size: int, features: Optional[int] = None, passes: Optional[int] = None,
                sparse: bool = False, prefetch: bool = False) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        """(features [n, f] float32, labels [n] int64) batches of the master's tasks, pass after pass
        (at most `passes`), each task's records shuffled; a task is reported finished once its
        batches were trained (the caller steps after each batch), with its loss windows. sparse:
        (sparse ids [n, f] int64, labels) of examples with f sparse ids each (decode_sparse);
        prefetch (with sparse): every sparse module starts reading the next batch's rows while this
        one trains (for models whose tables all look up the whole batch of ids)."""
        self._require("batches")
        for task, x, y in self._tasks(passes, features, sparse):
            self._windows, self._window = [], _Window()
            self.progress.task, self.progress.pass_ = task.id, getattr(task, "pass")
            for i in range(0, len(y), batch_size):
                self._size = len(y[i:i + batch_size])
                if sparse and prefetch and i + batch_size < len(y):
                    for m in self.sparse:
                        m.prefetch(x[i + batch_size:i + 2 * batch_size])
                yield x[i:i + batch_size], y[i:i + batch_size]
            self.flush()
            self._close_window()
            self.client.task_finished(task, len(y), self._windows)
            self.tasks_done, self.records_done = self.tasks_done + 1, self.records_done + len(y)
            self.progress.task = -1
        self.progress.state = "FINISHED"


def _group_configs(params: Dict[str, torch.nn.Parameter], groups: Optional[Sequence[Dict[str, Any]]],
                   default: optimizer_pb2.OptimizerConfig) -> Dict[str, optimizer_pb2.OptimizerConfig]:
    """Each parameter's optimizer: its group's (torch.optim-style groups of {"params", "optimizer"}),
    else `default`."""
    names = {id(p): n for n, p in params.items()}
    configs = {n: default for n in params}
    grouped: Dict[str, int] = {}
    for g, group in enumerate(groups or ()):
        if set(group) != {"params", "optimizer"} or not isinstance(group["optimizer"], optimizer_pb2.OptimizerConfig):
            raise ValueError("param_groups[%d] must be {'params': parameters, 'optimizer': optimizer(...)}, has %s"
                             % (g, sorted(group)))
        for p in group["params"]:
            n = names.get(id(p))
            if n is None:
                raise ValueError("param_groups[%d] holds a parameter that is not the module's" % g)
            if n in grouped:
                raise ValueError("parameter %r is in param_groups %d and %d" % (n, grouped[n], g))
            grouped[n], configs[n] = g, group["optimizer"]
    return configs


def decode_sparse(records: Sequence[bytes]) -> Tuple["np.ndarray[Any, np.dtype[np.int64]]",
                                                    "np.ndarray[Tuple[int], np.dtype[np.int64]]"]:
    """(sparse ids [n, f] int64, labels [n] int64) of serialized Examples with f sparse ids each (as
    the click-through data: one id per field; their values must be absent or 1)."""
    examples = [example_pb2.Example.FromString(r) for r in records]
    counts = {len(e.sparse_ids) for e in examples}
    if len(counts) > 1:
        raise ValueError("examples have %s sparse ids: decode_sparse needs the same count in each" % sorted(counts))
    if any(v != 1.0 for e in examples for v in e.sparse_values):
        raise ValueError("examples have sparse values other than 1: decode_sparse reads ids only")
    return (np.array([list(e.sparse_ids) for e in examples], np.int64).reshape(len(examples), -1),
            np.array([e.label for e in examples], np.int64))


def lookahead(batches: Iterable[T]) -> Iterator[Tuple[T, Optional[T]]]:
    """(batch, the next batch or None): to prefetch the next batch's rows (SparseModule.prefetch)
    while this one trains."""
    it = iter(batches)
    try:
        current = next(it)
    except StopIteration:
        return
    for nxt in it:
        yield current, nxt
        current = nxt
    yield current, None


def decode(records: Sequence[bytes]) -> Tuple[FloatArray, "np.ndarray[Tuple[int], np.dtype[np.int64]]"]:
    """(features [n, f] float32, labels [n] int64) of serialized Examples with dense features. Records
    laid out as protobuf writes them (field 1 packed floats of one size, then label 4 < 128 or none
    for 0) are sliced as bytes, with no per-float Python; others are parsed with protobuf."""
    r0 = records[0] if records else b""
    size, h = _varint(r0, 1) if r0[:1] == b"\x0a" else (0, 0)
    end, n = h + size, len(records)
    tails = [r[end:] for r in records]
    if h and all(r[:h] == r0[:h] for r in records) and all(
            not t or (len(t) == 2 and t[0] == 0x20 and t[1] < 0x80) for t in tails):
        x = np.frombuffer(bytearray(b"".join([r[h:end] for r in records])), "<f4").reshape(n, size // 4)  # writable
        return x, np.array([t[1] if t else 0 for t in tails], np.int64)
    examples = [example_pb2.Example.FromString(r) for r in records]
    return (np.array([e.dense for e in examples], np.float32).reshape(n, -1),
            np.array([e.label for e in examples], np.int64))


def _varint(b: bytes, i: int) -> Tuple[int, int]:
    v = shift = 0
    while i < len(b):
        v, i, shift = v | (b[i] & 0x7F) << shift, i + 1, shift + 7
        if b[i - 1] < 0x80:
            return v, i
    return 0, 0
