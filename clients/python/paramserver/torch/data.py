"""Your own data through the master's tasks: TaskDataset, an IterableDataset for torch's DataLoader.

Each task of the job's dataset is read once. Whoever iterates the dataset (the trainer's process, or
each DataLoader worker process) asks the master for tasks itself, under the trainer's id, over a
channel of its own (a worker needs no membership: the trainer's process holds it, and the tasks a
trainer holds are leased with it). It reads the task's chunks (local paths or s3://), decodes and
shuffles its records and yields batches (x, y, TaskBatch). The training loop takes them through
Trainer.loop(loader), which reports a task finished to the master once its last batch was trained
(the caller stepped after it), with its loss windows, and hands back, when the loop ends early, the
tasks it saw but did not finish. A worker that dies holding a task: the master takes the task back
after its task-timeout (paramserver.master.task-timeout, 60 s by default) and hands it out again.

    dataset = trainer.dataset(batch_size=256, sparse=True)
    loader = DataLoader(dataset, batch_size=None, num_workers=2)   # the dataset makes the batches
    for x, y in trainer.loop(loader):
        loss = ...; model.zero_grad(); loss.backward(); trainer.step(loss.item())
"""

from __future__ import annotations

import logging
import multiprocessing
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import torch
from torch.utils.data import IterableDataset, get_worker_info

from .. import recordio
from .._stubs import ma, ma_grpc
from ..client import Client, Tls
from ..errors import ParamServerError

log = logging.getLogger(__name__)
Decoder = Callable[[Sequence[bytes]], Tuple[Any, Any]]
__all__ = ["TaskBatch", "TaskDataset", "loop"]
IDLE_S = 0.05  # how long a reader waits for a task before it yields an idle marker


@dataclass(frozen=True)
class TaskBatch:
    """Which task a batch comes from: `records` the task's records, `last` its last batch."""

    task_id: int
    epoch: int
    pass_: int
    records: int
    last: bool
    loss_every_records: int = 0
    idle: bool = False  # no batch: the reader waits for a task (see TaskDataset)


class TaskDataset(IterableDataset):  # type: ignore[type-arg]
    """(x, y, TaskBatch) batches of the master's tasks, each task read once (see the module's text).
    Made by Trainer.dataset(); picklable (it holds addresses and settings, no channel), so that
    DataLoader workers, forked or spawned, each open their own channel to the master.

    While the master has no task to hand out (the pass ends with tasks still being trained), a
    reader yields an idle marker (empty tensors, TaskBatch.idle) every ~50 ms instead of blocking:
    a DataLoader takes its workers' batches in turn, so a worker that blocked would stall the
    batches of the others, whose tasks must be trained for the pass to end. loop() skips them.

    decode: records (serialized Examples) to (x, y) numpy arrays or tensors; default decode (dense
    features) or, with sparse, decode_sparse. transform: applied to each batch's (x, y) tensors."""

    def __init__(self, masters: Sequence[str], trainer_id: str, batch_size: int, passes: Optional[int] = None,
                 decode: Optional[Decoder] = None, seed: int = 0, tls: Optional[Tls] = None,
                 timeout_s: float = 10.0, failover_s: float = 60.0) -> None:
        super().__init__()
        if batch_size <= 0:
            raise ValueError("batch_size must be positive, got %d" % batch_size)
        if not trainer_id:
            raise ValueError("the dataset needs the trainer's id: join the job first (Trainer.dataset())")
        self.masters, self.trainer_id, self.batch_size = list(masters), trainer_id, batch_size
        self.passes, self.decode, self.seed = passes, decode, seed
        self.tls, self.timeout_s, self.failover_s = tls, timeout_s, failover_s

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor, TaskBatch]]:
        if get_worker_info() is not None and getattr(multiprocessing.current_process(), "_start_method", "") == "fork":
            # a forked child inherits gRPC's threads in whatever state they were: its calls hang
            raise RuntimeError("TaskDataset's DataLoader workers must be spawned, not forked (gRPC does not "
                               "survive fork): DataLoader(dataset, batch_size=None, num_workers=n, "
                               "multiprocessing_context='spawn'), or use trainer.data_loader()")
        client = Client(self.masters, self.trainer_id, self.timeout_s, self.failover_s, tls=self.tls)
        current: Optional[ma.Task] = None
        try:
            for task, loss_every in _leases(client, self.passes):
                if task is None:
                    yield _EMPTY, _EMPTY, _IDLE
                    continue
                current = task
                try:
                    records = [r for c in task.chunks for r in recordio.read_chunk(c.path, c.offset, c.length)]
                    x, y = (self.decode or _default_decode)(records)
                except (OSError, recordio.CorruptRecordError, ValueError) as e:
                    _report(client, "TaskFailed", ma.TaskFailedRequest(
                        trainer_id=self.trainer_id, task_id=task.id, epoch=task.epoch,
                        reason="cannot read task %d: %s" % (task.id, e)))
                    current = None
                    continue
                xt, yt = torch.as_tensor(x), torch.as_tensor(y)
                n = len(yt)
                order = shuffled(n, self.seed ^ (task.id * 31 + task.epoch))
                index = torch.tensor(order, dtype=torch.int64)
                xt, yt = xt[index], yt[index]
                for i in range(0, n, self.batch_size):
                    tag = TaskBatch(task.id, task.epoch, getattr(task, "pass"), n, i + self.batch_size >= n,
                                    loss_every)
                    yield xt[i:i + self.batch_size], yt[i:i + self.batch_size], tag
                current = None  # every batch is out: the training loop reports it
        finally:
            if current is not None:  # left in the middle of a task: hand it back
                _report(client, "TaskFailed", ma.TaskFailedRequest(
                    trainer_id=self.trainer_id, task_id=current.id, epoch=current.epoch,
                    reason="the reader stopped", handed_back=True))
            client.close()

    def __repr__(self) -> str:
        worker = get_worker_info()
        return "TaskDataset(trainer=%r, batch_size=%d%s)" % (
            self.trainer_id, self.batch_size, "" if worker is None else ", worker=%d" % worker.id)


_EMPTY = torch.zeros(0)
_IDLE = TaskBatch(-1, 0, 0, 0, False, 0, idle=True)


def _default_decode(records: Sequence[bytes]) -> Tuple[Any, Any]:
    from . import decode
    return decode(records)


def _report(client: Client, method: str, request: Any) -> None:
    try:
        client._master(ma_grpc.MasterStub, method, request, "reporting a task")
    except ParamServerError as e:
        log.warning("%s for task %d not delivered (the master re-dispatches it after its task-timeout): %s",
                    method, request.task_id, e)


def shuffled(n: int, seed: int) -> List[int]:
    """The order a task's n records are trained in: java.util.Collections.shuffle of 0..n-1 with
    java.util.Random(seed), as the Java trainer shuffles a task (the same seed gives the same
    order in both)."""
    s = (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)
    order = list(range(n))
    for i in range(n, 1, -1):
        while True:  # Random.nextInt(i): next(31), rejecting the values of an incomplete last range
            s = (s * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
            u = s >> 17
            if i & (i - 1) == 0:
                j = (i * u) >> 31
                break
            j = u % i
            if u - j + (i - 1) < (1 << 31):
                break
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def _leases(client: Client, passes: Optional[int]) -> Iterator[Tuple[Optional[ma.Task], int]]:
    """(task, loss_every_records) of the master's tasks for the trainer's id, pass after pass, until
    the job is finished or the pass `passes` would start; (None, 0) each time the master had none to
    hand out yet (after a short wait). ASYNC jobs only (Trainer.dataset checks)."""
    R = ma.GetTaskResponse
    current_pass = 0
    while True:
        if passes is not None and current_pass >= passes:
            return
        # no hold: a reader must not block long; request_id: a retry of this request (the same
        # object, Client._master) at another master gets the tasks of a lost answer back
        req = ma.GetTaskRequest(trainer_id=client.trainer_id, request_id=uuid.uuid4().hex)
        setattr(req, "pass", current_pass)  # a Python keyword
        r = client._master(ma_grpc.MasterStub, "GetTask", req, "getting a task")
        if r.outcome == R.TASK:
            for t in [r.task] + list(r.more_tasks):
                if passes is not None and getattr(t, "pass") >= passes:
                    _report(client, "TaskFailed", ma.TaskFailedRequest(
                        trainer_id=client.trainer_id, task_id=t.id, epoch=t.epoch,
                        reason="past the passes asked for", handed_back=True))
                    continue
                yield t, r.loss_every_records
        elif r.outcome in (R.WAIT, R.PASS_NOT_STARTED):
            time.sleep(min(IDLE_S, max(0.005, r.retry_after_ms / 1000.0)))
            yield None, 0
        elif r.outcome == R.PASS_FINISHED:
            current_pass = r.current_pass
        elif r.outcome == R.JOB_FINISHED:
            return
        elif r.outcome == R.JOB_FAILED:
            raise ParamServerError("the job failed: %s" % r.reason)
        else:
            raise ParamServerError("the master answered GetTask with outcome %d" % r.outcome)


def loop(trainer: Any, batches: Iterable[Tuple[torch.Tensor, torch.Tensor, TaskBatch]], prefetch: bool = False
         ) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
    """(x, y) of `batches` (a DataLoader over a TaskDataset); after the caller's step on a task's
    last batch, the task is reported finished with the loss windows since the last one. Tasks seen
    but not finished when the loop ends early are handed back. prefetch: the sparse modules start
    reading the next batch's rows (when it is already there) while this one trains."""
    open_tasks: Dict[Tuple[int, int], TaskBatch] = {}
    client: Client = trainer.client
    last_pass = -1
    it = iter(batches)
    ahead = next(it, None)
    try:
        while ahead is not None:
            x, y, tag = ahead
            ahead = next(it, None) if prefetch or tag.idle else None
            if tag.idle:
                continue
            if prefetch and ahead is not None and not ahead[2].idle:
                for m in trainer.sparse:
                    m.prefetch(ahead[0])
            trainer._size = len(y)
            trainer.progress.task, trainer.progress.pass_ = tag.task_id, tag.pass_
            client.loss_every_records = tag.loss_every_records
            last_pass = max(last_pass, tag.pass_)
            open_tasks[(tag.task_id, tag.epoch)] = tag
            yield x, y
            if tag.last:
                trainer.flush()  # the task's last gradients are acknowledged before it is reported
                trainer._close_window()
                windows: List[ma.LossWindow] = trainer._windows
                trainer._windows = []
                client.task_finished(ma.Task(id=tag.task_id, epoch=tag.epoch), tag.records, windows)
                del open_tasks[(tag.task_id, tag.epoch)]
                trainer.tasks_done, trainer.records_done = trainer.tasks_done + 1, trainer.records_done + tag.records
            if not prefetch:
                ahead = next(it, None)
        # the readers saw the job end (or the passes asked for): client.current_pass is the pass
        # after the last one trained, as Client.tasks() leaves it (evaluation reports name the last)
        client.current_pass = max(client.current_pass, last_pass + 1)
        trainer.progress.state, trainer.progress.task = "FINISHED", -1
    finally:
        for tag in open_tasks.values():
            try:
                client.task_failed(ma.Task(id=tag.task_id, epoch=tag.epoch), "the training loop ended",
                                   handed_back=True)
            except ParamServerError as e:
                log.warning("could not hand task %d back (the master re-dispatches it later): %s", tag.task_id, e)
