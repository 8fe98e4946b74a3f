#!/usr/bin/env python3
"""Trains Java's MLP (or softmax regression) from Python against a paramserver job, with PyTorch and no
etcd client: joins through the master, initialises the pservers if it is granted the init lock,
trains the master's tasks and, when the job is finished, evaluates the last pass on the test data if
no other trainer does. Start a job without trainers of its own:

    scripts/run-local.sh --trainers 0 --run-dir runs/py      # prints the masters and the data
    PYTHONPATH=clients/python /usr/bin/python3 examples/python/train_mlp.py --cluster runs/py/cluster.json \\
        --data 'runs/py/data/train-*.recordio' --test 'runs/py/data/test-*.recordio'

--csv FILE trains on a CSV table instead (a header; the label column, class indices 0.., named by
--label-column; every other column a feature), written as RecordIO beside it for the master.
Exit code: 0 the job finished, 1 it failed, 2 bad usage, 3 stopped by SIGTERM (tasks handed back). The last line is
    PYRESULT trainer=<id> tasks=<n> records=<n> [accuracy=<a> loss=<l>]
"""

import importlib.util
import argparse
import csv
import glob
import json
import logging
import os
import signal
import struct
import sys
import zlib

import torch

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    from paramserver import gen  # the client beside it, its stubs generated once (a build step)

    gen.ensure()
from paramserver import ParamServerError, recordio  # noqa: E402
from paramserver.client import ASYNC, BOUNDED_STALENESS, SYNC, Client, co, optimizer  # noqa: E402
from paramserver.torch import Trainer, decode  # noqa: E402
from paramserver.torch.models import MLP  # noqa: E402
from paramserver.v1 import example_pb2  # noqa: E402

MODES = {"async": ASYNC, "sync": SYNC, "bounded-staleness": BOUNDED_STALENESS}


def args_():
    ap = argparse.ArgumentParser(description="Train an MLP from Python against a paramserver job.")
    ap.add_argument("--master", help="master gRPC address(es), host:port[,host:port...] (default: "
                    "$PARAMSERVER_MASTERS)")
    ap.add_argument("--cluster", help="run-local's cluster.json: the masters are read from it")
    ap.add_argument("--trainer-id", default="", help="unique in the job (default: the master assigns one)")
    ap.add_argument("--data", help="training RecordIO glob (the job's dataset)")
    ap.add_argument("--test", help="test RecordIO glob, evaluated when the job is finished")
    ap.add_argument("--csv", help="train on this CSV table instead of --data")
    ap.add_argument("--label-column", default="label")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--passes", type=int, help="train at most this many of the job's passes")
    ap.add_argument("--hidden", default="", help="hidden layer sizes, e.g. 128,64 (none: softmax regression)")
    ap.add_argument("--activation", default="relu", choices=["relu", "tanh"])
    ap.add_argument("--features", type=int, default=0, help="dense features (0: from the data)")
    ap.add_argument("--classes", type=int, default=0, help="classes (0: from the data)")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--block-size", type=int, default=262144)
    ap.add_argument("--mode", default="async", choices=sorted(MODES))
    ap.add_argument("--staleness", type=int, default=0)
    ap.add_argument("--adopt", action="store_true", help="join with the job's model as it is (defined by another trainer)")
    ap.add_argument("--seed", type=int, default=0)
    return ap, ap.parse_args()


def masters(a):
    if a.master or not a.cluster:  # PARAMSERVER_MASTERS: set by the chart and the Kubeflow runtime
        return (a.master or os.environ.get("PARAMSERVER_MASTERS", "")).split(",")
    with open(a.cluster) as f:
        procs = json.load(f)["processes"]
    return ["127.0.0.1:%d" % p["grpcPort"] for p in procs if p["role"] == "master" and p.get("grpcPort")]


def read_examples(pattern, limit=None):
    out = []
    for path in sorted(glob.glob(pattern)):
        for r in recordio.read_records(path):
            out.append(example_pb2.Example.FromString(r))
            if limit and len(out) >= limit:
                return out
    return out


def csv_to_recordio(path, label_column):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    records = [example_pb2.Example(label=int(float(r[label_column])), dense=[
        float(v) for k, v in r.items() if k != label_column]).SerializeToString() for r in rows]
    out = os.path.abspath(path) + ".recordio"
    with open(out, "wb") as f:  # uncompressed RecordIO chunks of 500 records (docs/design.md §7)
        for i in range(0, len(records), 500):
            chunk = records[i:i + 500]
            payload = b"".join(struct.pack("<I", len(r)) + r for r in chunk)
            f.write(struct.pack("<5I", 0x01020304, zlib.crc32(payload), 0, len(payload), len(chunk)) + payload)
    return out


def evaluate(module, examples):
    x, y = (torch.from_numpy(a) for a in decode([e.SerializeToString() for e in examples]))
    with torch.no_grad():
        logits = module(x)
    return float(MLP.loss(logits, y)), float((logits.argmax(1) == y).float().mean())


def main():
    # SIGTERM: leave cleanly (the finally below hands the tasks back and ends the membership)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    ap, a = args_()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if not (a.master or a.cluster or os.environ.get("PARAMSERVER_MASTERS")) or not (a.data or a.csv):
        ap.error("give --master (or PARAMSERVER_MASTERS) or --cluster, and --data or --csv")
    data = os.path.abspath(a.data) if a.data else csv_to_recordio(a.csv, a.label_column)
    sample = read_examples(a.test or data, 5000) if a.test and glob.glob(a.test) else read_examples(data, 5000)
    if not sample:
        ap.error("no records in %s" % (a.test or data))
    features = a.features or len(sample[0].dense)
    classes = a.classes or max(2, max(e.label for e in sample) + 1)
    hidden = [int(h) for h in a.hidden.split(",") if h]
    torch.manual_seed(a.seed)
    module = MLP(features, classes, hidden, a.activation)
    client = Client(masters(a), a.trainer_id)
    try:
        trainer = Trainer(client, module, optimizer(a.optimizer, a.lr), a.block_size, MODES[a.mode], a.staleness, a.seed)
        trainer.join(adopt=a.adopt)
        ds = client.set_dataset([data], {"model": "mlp" if hidden else "softmax", "optimizer": a.optimizer,
                                         "learning-rate": a.lr, "batch-size": a.batch_size, "client": "python"})
        logging.info("dataset: %d files, %d tasks, %d records, %d passes%s", ds.files, ds.tasks, ds.records,
                     ds.passes, " (set before)" if ds.already_set else "")
        for x, y in trainer.batches(a.batch_size, features, a.passes):
            loss = MLP.loss(module(x), y)
            module.zero_grad()
            loss.backward()
            trainer.step(loss.item())
        result = "PYRESULT trainer=%s tasks=%d records=%d" % (client.trainer_id, trainer.tasks_done, trainer.records_done)
        last = max(0, client.current_pass - 1)
        if a.test and (a.passes is None or a.passes >= client.current_pass) and \
                client.acquire_lock(co.EVALUATE_PASS, last).outcome == co.AcquireLockResponse.GRANTED:
            trainer.pull()
            test = read_examples(a.test)
            loss, accuracy = evaluate(module, test)
            client.report_evaluation(last, loss, accuracy, len(test))
            result += " accuracy=%.4f loss=%.4f" % (accuracy, loss)
        print(result, flush=True)
        return 0
    except ParamServerError as e:
        logging.error("%s", e)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
