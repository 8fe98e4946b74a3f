#!/usr/bin/env python3
"""Click-through prediction with embeddings on the pservers: every example is 16 categorical ids (one
per field), the label a click. The model keeps one 8-wide embedding row per id in the job's sparse
table "emb" (created on the pservers as ids are first seen, updated there by Adagrad) plus a wide
part (one weight per id, table "wide"), and a dense head; it reports the test AUC.

    # the data: the benchmarks' click-through recipe (16 fields, Zipf-distributed ids, labels from a
    # hidden logistic model), written as RecordIO by paramserver.recordio.Writer
    python3 examples/python/train_ctr.py --generate runs/ctr/data --train 200000 --test 20000
    # a job without Java trainers, then this trainer (start more of them for more throughput)
    scripts/run-local.sh --trainers 0 --run-dir runs/ctr
    python3 examples/python/train_ctr.py --cluster runs/ctr/cluster.json \\
        --data 'runs/ctr/data/train-*.recordio' --test runs/ctr/data/test-00000.recordio

Exit code: 0 the job finished, 1 it failed, 2 bad usage, 3 stopped by SIGTERM. The last line is
    PYRESULT trainer=<id> tasks=<n> records=<n> [auc=<a> loss=<l> accuracy=<a>]
"""

import argparse
import glob
import importlib.util
import json
import logging
import os
import signal
import sys
import zlib

import numpy as np
import torch
from torch import nn

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    from paramserver import gen  # the client beside it, its stubs generated once (a build step)

    gen.ensure()
from paramserver import ParamServerError, recordio  # noqa: E402
from paramserver.client import Client, co, optimizer  # noqa: E402
from paramserver.torch import Embedding, EmbeddingBag, Trainer, decode_sparse  # noqa: E402
from paramserver.v1 import example_pb2  # noqa: E402

FIELDS, ZIPF_S = 16, 1.05  # as the benchmarks' CtrData


# ---- the data ----
def _mix(x):
    """splitmix64 of uint64s."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def hidden_weight(ids):
    """The hidden model's weight of each id: a normal value (sd 0.9) hashed from the id."""
    with np.errstate(over="ignore"):
        a, b = _mix(ids.astype(np.uint64)), _mix(ids.astype(np.uint64) ^ np.uint64(0x5DEECE66D))
    u1 = ((a >> np.uint64(11)).astype(np.float64) + 1) / 2.0 ** 53
    u2 = (b >> np.uint64(11)).astype(np.float64) / 2.0 ** 53
    return np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2) * 0.9


def click_data(n, ids, seed):
    """(ids [n, 16], labels [n]): field f's value f * (ids / 16) + a Zipf(1.05) rank among its values."""
    per_field = ids // FIELDS
    head = min(per_field, 1 << 20)
    cdf = np.cumsum(1.0 / np.arange(1, head + 1) ** ZIPF_S)
    tail = 0.0
    if per_field > head:
        tail = (per_field ** (1 - ZIPF_S) - head ** (1 - ZIPF_S)) / (1 - ZIPF_S)
    rng = np.random.default_rng(seed)
    u = rng.random((n, FIELDS)) * (cdf[-1] + tail)
    ranks = np.where(u < cdf[-1], np.searchsorted(cdf, np.minimum(u, cdf[-1])),
                     head + rng.integers(0, max(1, per_field - head), (n, FIELDS)))
    x = np.arange(FIELDS, dtype=np.int64) * per_field + ranks.astype(np.int64)
    logit = -1.0 + hidden_weight(x).sum(1)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return x, y


def generate(out, train, test, ids, shards):
    remote = out.startswith("s3://")  # written in memory, uploaded (PARAMSERVER_S3_ENDPOINT, AWS_ACCESS_KEY_ID...)
    if not remote:
        os.makedirs(out, exist_ok=True)
    files = []
    for name, n, seed, parts in (("train", train, 1, shards), ("test", test, 2, 1)):
        x, y = click_data(n, ids, seed)
        for s in range(parts):
            path = (out.rstrip("/") + "/" if remote else os.path.join(out, "")) + "%s-%05d.recordio" % (name, s)
            with recordio.Writer(path, recordio.GZIP, 1000) as w:
                for i in range(s, n, parts):
                    w.write(example_pb2.Example(sparse_ids=x[i].tolist(), label=int(y[i])).SerializeToString())
            files.append(path)
    return files


# ---- the model ----
class ClickModel(nn.Module):
    """wide (a weight per id, summed) + deep (an 8-wide row per id, through a dense head)."""

    def __init__(self, width=8, hidden=32, sparse_lr=0.05):
        super().__init__()
        adagrad = optimizer("adagrad", sparse_lr, initial_accumulator=0.1)
        self.wide = EmbeddingBag(None, 1, mode="sum", table="wide", optimizer_config=adagrad, init_stddev=0.0)
        self.emb = Embedding(None, width, table="emb", optimizer_config=adagrad, init_stddev=0.01)
        self.head = nn.Sequential(nn.Linear(FIELDS * width, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, ids):
        deep = self.head(self.emb(ids).reshape(len(ids), -1))
        return (self.wide(ids) + deep).squeeze(1)


def java_uniform(name, n, limit, seed):
    """The Java trainer's initial values of a dense parameter `name` with a Uniform(limit) initialiser
    (models' Initializers: SplittableRandom(seed ^ crc32(name) * golden gamma), nextDouble * 2 - 1,
    times the float32 limit), so that a module here starts where the Java model does."""
    golden = 0x9E3779B97F4A7C15
    start = (seed ^ (zlib.crc32(name.encode()) * golden)) & 0xFFFFFFFFFFFFFFFF
    with np.errstate(over="ignore"):
        draws = _mix(np.uint64(start) + np.arange(n, dtype=np.uint64) * np.uint64(golden))
    doubles = (draws >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return torch.from_numpy(((doubles * 2 - 1) * float(np.float32(limit))).astype(np.float32))


class SparseLr(nn.Module):
    """The Java trainer's sparse-lr (models' SparseLogisticRegression) in PyTorch: z = bias +
    sum_k wide[id_k] + out . sum_k emb[id_k], the same tables ("wide" width 1 from zeros, "emb" from
    normal(0.01), rows created by the pservers), bias from zero and "emb.out" uniform(+-sqrt(6 / (width
    + 1))) with the Java trainer's values for `seed`, every parameter on one optimizer: the figures of
    scripts/bench.sh --only python compare it with the Java trainer on the same data."""

    def __init__(self, width=8, optimizer_config=None, seed=42):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1))
        self.wide = EmbeddingBag(None, 1, mode="sum", table="wide", optimizer_config=optimizer_config, init_stddev=0.0)
        self.emb = EmbeddingBag(None, width, mode="sum", table="emb", optimizer_config=optimizer_config,
                                init_stddev=0.01)
        self.out = nn.Parameter(java_uniform("emb.out", width, (6.0 / (width + 1)) ** 0.5, seed))

    def forward(self, ids):
        return self.bias + self.wide(ids).squeeze(1) + self.emb(ids) @ self.out


def auc(scores, labels):
    """The area under the ROC curve (the rank statistic; ties are rare with float scores)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    p, n = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - p * (p + 1) / 2) / (p * n)) if p and n else float("nan")


def evaluate(model, paths):
    x, y = decode_sparse([r for p in paths for r in recordio.read_records(p)])
    model.eval()
    scores = []
    with torch.no_grad():
        for i in range(0, len(y), 4096):
            scores.append(model(torch.from_numpy(x[i:i + 4096])).numpy())
    model.train()
    s = np.concatenate(scores)
    loss = float(nn.functional.binary_cross_entropy_with_logits(torch.from_numpy(s), torch.from_numpy(y).float()))
    return auc(s, y), loss, float(((s > 0) == (y == 1)).mean()), len(y)


def masters(a):
    if a.master or not a.cluster:  # PARAMSERVER_MASTERS: set by the chart and the Kubeflow runtime
        return (a.master or os.environ.get("PARAMSERVER_MASTERS", "")).split(",")
    with open(a.cluster) as f:
        procs = json.load(f)["processes"]
    return ["127.0.0.1:%d" % p["grpcPort"] for p in procs if p["role"] == "master" and p.get("grpcPort")]


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    ap = argparse.ArgumentParser(description="Click-through prediction with embeddings on the pservers.")
    ap.add_argument("--generate", metavar="DIR", help="write click-through RecordIO files to DIR (or s3://bucket/prefix) and exit")
    ap.add_argument("--train", type=int, default=200000, help="--generate: training examples")
    ap.add_argument("--test", type=int, default=20000, help="--generate: test examples")
    ap.add_argument("--ids", type=int, default=1 << 20, help="--generate: distinct ids over the 16 fields")
    ap.add_argument("--shards", type=int, default=4, help="--generate: training files")
    ap.add_argument("--master", help="master gRPC address(es), host:port[,host:port...] (default: "
                    "$PARAMSERVER_MASTERS)")
    ap.add_argument("--cluster", help="run-local's cluster.json: the masters are read from it")
    ap.add_argument("--trainer-id", default="")
    ap.add_argument("--data", help="training RecordIO glob, local or s3://bucket/prefix* (the job's dataset)")
    ap.add_argument("--test-data", dest="test_data", help="test RecordIO glob, evaluated when the job is finished")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--passes", type=int, help="train at most this many of the job's passes")
    ap.add_argument("--lr", type=float, default=0.01, help="the dense head's Adam learning rate")
    ap.add_argument("--sparse-lr", type=float, default=0.05, help="the tables' Adagrad learning rate")
    ap.add_argument("--seed", type=int, default=42,
                    help="the seed of the records' order in each task and of the dense initial values (the "
                         "Java trainer's paramserver.trainer.seed, default 42: the same order and values)")
    ap.add_argument("--row-staleness", dest="row_staleness", type=int, default=0,
                    help="how many batches a row read from the pservers may serve (0: every batch reads its "
                         "rows; the Java trainer's paramserver.trainer.sparse.staleness)")
    ap.add_argument("--model", choices=("wide-deep", "sparse-lr"), default="wide-deep",
                    help="wide-deep: embeddings and a dense head (Adagrad tables, Adam head); sparse-lr: the "
                         "Java trainer's model, every parameter on SGD --lr")
    ap.add_argument("--embedding-width", type=int, default=8)
    ap.add_argument("--workers", type=int, default=0,
                    help="read the tasks through trainer.dataset() and a DataLoader with this many worker processes "
                         "(0: trainer.batches() in this process, with row prefetch)")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if a.generate:
        for path in generate(a.generate, a.train, a.test, a.ids, a.shards):
            print(path)
        return 0
    if not (a.master or a.cluster or os.environ.get("PARAMSERVER_MASTERS")) or not a.data:
        ap.error("give --master (or PARAMSERVER_MASTERS) or --cluster, and --data (or --generate DIR)")
    torch.manual_seed(a.seed)
    if a.model == "sparse-lr":
        dense = optimizer("sgd", a.lr)
        model = SparseLr(a.embedding_width, dense, a.seed)
    else:
        dense = optimizer("adam", a.lr)
        model = ClickModel(a.embedding_width, sparse_lr=a.sparse_lr)
    client = Client(masters(a), a.trainer_id)
    try:
        trainer = Trainer(client, model, dense, seed=a.seed, row_staleness=a.row_staleness).join()
        client.set_dataset([a.data if a.data.startswith("s3://") else os.path.abspath(a.data)], {"model": "python-" + a.model, "client": "python"})
        if a.workers:
            # your own data path: the master's tasks as a torch IterableDataset, read and decoded by
            # DataLoader worker processes (each takes its tasks from the master under this trainer's id)
            loader = trainer.data_loader(a.batch_size, num_workers=a.workers, passes=a.passes, sparse=True)
            batches = trainer.loop(loader, prefetch=True)
        else:
            # prefetch: the next batch's rows are read while this one trains (both tables see every id)
            batches = trainer.batches(a.batch_size, passes=a.passes, sparse=True, prefetch=True)
        for x, y in batches:
            loss = nn.functional.binary_cross_entropy_with_logits(model(x), y.float())
            model.zero_grad()
            loss.backward()
            trainer.step(loss.item())
        result = "PYRESULT trainer=%s tasks=%d records=%d" % (client.trainer_id, trainer.tasks_done, trainer.records_done)
        last = max(0, client.current_pass - 1)
        tests = ([a.test_data] if a.test_data.startswith("s3://") else sorted(glob.glob(a.test_data))
                 ) if a.test_data else []
        if tests and client.acquire_lock(co.EVALUATE_PASS, last).outcome == co.AcquireLockResponse.GRANTED:
            trainer.pull()
            area, loss, accuracy, n = evaluate(model, tests)
            client.report_evaluation(last, loss, accuracy, n, auc=area)
            result += " auc=%.4f loss=%.4f accuracy=%.4f" % (area, loss, accuracy)
        logging.info("rows: %d pulls, %d rows pulled, %d cache hits", trainer.rows.pulls, trainer.rows.pulled_rows,
                     trainer.rows.hits)
        print(result, flush=True)
        return 0
    except ParamServerError as e:
        logging.error("%s", e)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
