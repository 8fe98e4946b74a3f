"""PyTorch integration: a Trainer registers an nn.Module's parameters with the job (the optimizer
runs on the pservers), pulls them before forward (written into the parameters in place), pushes
their gradients after backward, and iterates the master's tasks as (features, labels) batches."""

import random
import time

import numpy as np
import torch

from .. import recordio
from ..client import ASYNC, BLOCK_SIZE, dense_spec, ma, optimizer
from ..errors import CallOrderError, ModelMismatch
from ..v1 import example_pb2

__all__ = ["Trainer", "decode"]


class Trainer:
    """Trains `module` (float32 parameters on the CPU) through `client` (a paramserver.Client).

        trainer = Trainer(client, module, optimizer("adam", 0.01)).join()
        for x, y in trainer.batches(batch_size=64):
            loss = module.loss(module(x), y)
            module.zero_grad(); loss.backward()
            trainer.step(loss)          # push the gradients, take the new values in
    """

    def __init__(self, client, module, optimizer_config=None, block_size=BLOCK_SIZE, mode=ASYNC,
                 staleness=0, seed=0):
        self.client, self.module, self.seed = client, module, seed
        self.params = dict(module.named_parameters())
        for name, p in self.params.items():
            if p.dtype != torch.float32 or p.device.type != "cpu" or not p.is_contiguous():
                raise ValueError("parameter %r must be a contiguous float32 CPU tensor, is %s on %s"
                                 % (name, p.dtype, p.device))
        self.specs = [dense_spec(n, p.shape, block_size, optimizer_config or optimizer())
                      for n, p in self.params.items()]
        self.mode, self.staleness = mode, staleness
        self.values, self.tasks_done, self.records_done = None, 0, 0
        self._size, self._windows, self._window, self._pending = 0, [], [0, 0.0, 0, 0], None

    def join(self, adopt=False):
        """Joins the job with the module's specs (adopt: with none, taking the job's model, which must
        have the module's names and shapes), initialises the pservers if this trainer is granted the
        init lock (with the module's own initial values), then pulls the job's values into the module.
        A module that does not match the job's model raises ModelMismatch with the master's message."""
        joined = self.client.join([] if adopt else self.specs, self.mode, self.staleness)
        job = {p.name: list(p.shape) for p in joined.parameters if not p.sparse}
        mine = {n: list(p.shape) for n, p in self.params.items()}
        if job != mine:
            diff = sorted(set(job) ^ set(mine)) or [n for n in mine if mine[n] != job[n]]
            raise ModelMismatch("the module's parameters %s differ from the job's %s (first: %s)"
                                % (mine, job, diff[0]), "MODEL_MISMATCH")
        # flat numpy views sharing the parameters' memory: pulls write into the module in place
        self.values = {n: p.detach().view(-1).numpy() for n, p in self.params.items()}
        self.client.init_parameters(self.values)
        self.client.pull(self.values)
        return self

    def _require(self, method):
        if self.values is None:
            raise CallOrderError("%s() before join(): call trainer.join() first" % method)

    def pull(self):
        """Writes the job's current values into the module's parameters."""
        self._require("pull")
        self.flush()
        self.client.pull(self.values)

    def step(self, loss=None):
        """Pushes the parameters' gradients as the next step and writes new values into the module.
        ASYNC: the push is answered with the values while the next batch computes; they are written
        before this returns next time (one batch of lag, as the Java trainer's pipeline-lag), and at
        the end of each task. SYNC/BOUNDED_STALENESS: a pull after the step. A parameter without a
        gradient pushes zeros. `loss` (the batch's mean loss) goes to the master's run tracking."""
        self._require("step")
        grads = {n: (p.grad.detach().reshape(-1).numpy() if p.grad is not None else np.zeros(p.numel(), np.float32))
                 for n, p in self.params.items()}
        self.flush()  # the previous step is acknowledged before this one is sent (exactly-once)
        self._pending = self.client.push(grads, into=self.values, wait=False)  # copies the gradients
        if self.mode != ASYNC:
            self.flush()
        if loss is not None and self.client.loss_every_records:
            w = self._window
            w[0] += self._size
            w[1] += float(loss) * self._size
            w[2] += 1
            w[3] = int(time.time() * 1000)
            if w[0] >= self.client.loss_every_records:
                self._close_window()

    def flush(self):
        """Waits for the push in flight and writes its values into the module."""
        pending, self._pending = self._pending, None
        if pending is not None:
            with torch.no_grad():
                self.client.complete(pending)

    def _tasks(self, passes, features):
        """(task, features, labels) of each task, read, decoded and shuffled."""
        tasks = self.client.tasks()
        for task in tasks:
            if passes is not None and getattr(task, "pass") >= passes:
                tasks.close()  # hands the task back
                return
            try:
                x, y = decode([r for c in task.chunks for r in recordio.read_chunk(c.path, c.offset, c.length)])
            except (OSError, recordio.CorruptRecordError) as e:
                self.client.task_failed(task, "cannot read task %d: %s" % (task.id, e))
                continue
            if features is not None and x.shape[1:] != (features,):
                raise ValueError("examples have %s dense features, the model expects %d" % (x.shape[1:], features))
            order = list(range(len(y)))
            random.Random(self.seed ^ (task.id * 31 + task.epoch)).shuffle(order)
            yield task, torch.from_numpy(x[order]), torch.from_numpy(y[order])

    def _close_window(self):
        r, s, b, t = self._window
        if r:
            self._windows.append(ma.LossWindow(records=r, loss_sum=s, batches=b, ended_ms=t))
        self._window = [0, 0.0, 0, 0]

    def batches(self, batch_size, features=None, passes=None):
        """(features [n, f] float32, labels [n] int64) batches of the master's tasks, pass after pass
        (at most `passes`), each task's records shuffled; a task is reported finished once its
        batches were trained (the caller steps after each batch), with its loss windows."""
        self._require("batches")
        for task, x, y in self._tasks(passes, features):
            self._windows, self._window = [], [0, 0.0, 0, 0]
            for i in range(0, len(y), batch_size):
                self._size = len(y[i:i + batch_size])
                yield x[i:i + batch_size], y[i:i + batch_size]
            self.flush()
            self._close_window()
            self.client.task_finished(task, len(y), self._windows)
            self.tasks_done, self.records_done = self.tasks_done + 1, self.records_done + len(y)


def decode(records):
    """(features [n, f] float32, labels [n] int64) of serialized Examples with dense features. Records
    laid out as protobuf writes them (field 1 packed floats of one size, then label 4 < 128 or none
    for 0) are sliced as bytes, with no per-float Python; others are parsed with protobuf."""
    r0 = records[0] if records else b""
    size, h = _varint(r0, 1) if r0[:1] == b"\x0a" else (0, 0)
    end, n = h + size, len(records)
    tails = [r[end:] for r in records]
    if h and all(r[:h] == r0[:h] for r in records) and all(
            not t or (len(t) == 2 and t[0] == 0x20 and t[1] < 0x80) for t in tails):
        x = np.frombuffer(b"".join([r[h:end] for r in records]), "<f4").reshape(n, size // 4)
        return x, np.array([t[1] if t else 0 for t in tails], np.int64)
    examples = [example_pb2.Example.FromString(r) for r in records]
    return (np.array([e.dense for e in examples], np.float32).reshape(n, -1),
            np.array([e.label for e in examples], np.int64))


def _varint(b, i):
    v = shift = 0
    while i < len(b):
        v, i, shift = v | (b[i] & 0x7F) << shift, i + 1, shift + 7
        if b[i - 1] < 0x80:
            return v, i
    return 0, 0
