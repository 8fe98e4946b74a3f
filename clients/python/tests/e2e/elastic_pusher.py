#!/usr/bin/env python3
"""Scripted pusher of the end-to-end elastic test (integration-tests PythonElasticScalingTest), driven
against a real master and real pservers while the job is scaled; not collected by pytest.

Joins a job whose model is a dense parameter `w` of --elements float32 values in blocks of --block and
a sparse table `emb` of width 4 (rows start at 0), SGD with learning rate 1 (ASYNC), initialises `w`
to INIT(i) = i % 7 - 3 if granted the init lock, then pushes steps s = 1, 2, ... of integer gradients
(exact in float32): w gets DENSE(s, i) = (31 s + i) % 5 - 2 on blocks s % B and (s + 5) % B (0
elsewhere), emb gets ROW(s, r, k) = (s + r + k) % 5 - 2 on row (7919 s + 104729 r) % --ids for r in
0..31 (a repeated id's gradients are summed). Every 5th step it pulls `w` and the step's rows too.
Each step is appended to --log before it is sent ("sent <s>") and once acknowledged ("acked <s>").
It stops after the first step at or beyond --min-steps once --stop exists.

Exit 0 when stopped, 1 on a paramserver error (a MOVED it did not follow, for one).
"""

import importlib.util
import argparse
import logging
import os
import sys

import numpy as np

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from paramserver import ParamServerError  # noqa: E402
from paramserver.client import ASYNC, Client, dense_spec, optimizer, pb, tensor_pb2  # noqa: E402

WIDTH, ROWS = 4, 32


def dense(step, n, block):
    g = np.zeros(n, np.float32)
    blocks = n // block
    for b in {step % blocks, (step + 5) % blocks}:
        i = np.arange(b * block, (b + 1) * block, dtype=np.int64)
        g[i] = ((31 * step + i) % 5) - 2
    return g


def rows(step, ids):
    r = np.arange(ROWS, dtype=np.int64)
    k = np.arange(WIDTH, dtype=np.int64)
    return (7919 * step + 104729 * r) % ids, (((step + r[:, None] + k[None, :]) % 5) - 2).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--trainer-id", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--min-steps", type=int, default=1)
    ap.add_argument("--elements", type=int, default=8192)
    ap.add_argument("--block", type=int, default=512)
    ap.add_argument("--ids", type=int, default=20000)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    n, sgd = a.elements, optimizer("sgd", 1.0)
    client = Client(a.master.split(","), a.trainer_id, timeout_s=10, retry_s=120)
    try:
        client.join([dense_spec("w", [n], a.block, sgd),
                     pb.ParameterSpec(name="emb", shape=[0, WIDTH], dtype=tensor_pb2.FLOAT32, sparse=True,
                                      init_stddev=0.0, optimizer=sgd)], ASYNC, 0)
        values = {"w": ((np.arange(n) % 7) - 3).astype(np.float32)}
        client.init_parameters(values)
        fd = os.open(a.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        print("PUSHER ready session=%s" % client.session, flush=True)
        s = 0
        while s < a.min_steps or not os.path.exists(a.stop):
            s += 1
            ids, g = rows(s, a.ids)
            os.write(fd, b"sent %d\n" % s)
            if client.push({"w": dense(s, n, a.block)}, sparse={"emb": (ids, g)}) != s:
                raise AssertionError("client.push() numbered step %d as %d" % (s, client.step))
            os.write(fd, b"acked %d\n" % s)
            if s % 5 == 0:
                client.pull(values)
                if client.pull_rows("emb", ids).shape != (ROWS, WIDTH):
                    raise AssertionError("pull_rows returned the wrong shape")
        os.close(fd)
        print("PUSHER done steps=%d moved=%d" % (s, client.moved_requests), flush=True)
        return 0
    except ParamServerError as e:
        logging.error("%s", e)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
