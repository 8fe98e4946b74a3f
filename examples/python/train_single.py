#!/usr/bin/env python3
"""The bench's baseline for a Python trainer: the same module (paramserver.torch.models.MLP, same seed
and initialisation), loss, batch size and plain SGD as train_mlp.py, trained in one process with no
RPC on the same RecordIO data. Each pass reads the files, decodes, shuffles, cuts batches and trains
(as a trainer does per task); evaluation on the test data after the last pass is not timed. Prints

    pass=<i> records=<n> seconds=<s>      (one line per pass)
    accuracy=<a>

    PYTHONPATH=clients/python /usr/bin/python3 examples/python/train_single.py --data 'd/train-*.recordio' \\
        --test 'd/test-*.recordio' --hidden 128,64 --lr 0.1 --batch-size 64 --passes 5
"""

import importlib.util
import argparse
import glob
import os
import random
import sys
import time

import torch

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    from paramserver import gen  # the client beside it, its stubs generated once (a build step)

    gen.ensure()
from paramserver import recordio  # noqa: E402
from paramserver.torch import decode  # noqa: E402
from paramserver.torch.models import MLP  # noqa: E402


def read(pattern):
    return decode([r for path in sorted(glob.glob(pattern)) for r in recordio.read_records(path)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--hidden", default="")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    tx, ty = read(a.test)
    torch.manual_seed(a.seed)
    module = MLP(tx.shape[1], max(2, int(ty.max()) + 1), [int(h) for h in a.hidden.split(",") if h])
    sgd = torch.optim.SGD(module.parameters(), lr=a.lr)
    for p in range(a.passes):
        t0 = time.perf_counter()
        x, y = read(a.data)
        order = list(range(len(y)))
        random.Random(p).shuffle(order)
        x, y = torch.from_numpy(x[order]), torch.from_numpy(y[order])
        for i in range(0, len(y), a.batch_size):
            loss = MLP.loss(module(x[i:i + a.batch_size]), y[i:i + a.batch_size])
            sgd.zero_grad()
            loss.backward()
            sgd.step()
        print("pass=%d records=%d seconds=%.4f" % (p, len(y), time.perf_counter() - t0), flush=True)
    with torch.no_grad():
        accuracy = float((module(torch.from_numpy(tx)).argmax(1) == torch.from_numpy(ty)).float().mean())
    print("accuracy=%.6f" % accuracy)


if __name__ == "__main__":
    main()
