#!/usr/bin/env python3
"""Scripted pusher of the end-to-end exactly-once test (integration-tests PythonTrainerKillTest),
driven against a real master and real pservers; not collected by pytest.

Joins a job whose model is one parameter `w` of --elements float32 values in blocks of --block,
SGD with learning rate 1 (ASYNC), initialises it to INIT(i) = i % 7 - 3 if granted the init lock,
then pushes the steps of a fixed sequence, GRADIENT(s, i) = (31 s + i) % 5 - 2 (small integers,
exact in float32), one step at a time with the client's exactly-once identities (trainer id,
session, step, part). Each step is appended to --log before it is sent ("sent <s>") and after every
pserver acknowledged it ("acked <s>"), written straight to the file (no buffering in the process), so
a kill -9 loses nothing of what was logged. A run continues the sequence after the last step a
previous run logged as sent, with a new session: steps a killed run left unacknowledged are not sent
again. The Java test computes the expected values from the log and pulls the pservers itself.

Exit 0 after the last step (--steps), 1 on a paramserver error.
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
from paramserver.client import ASYNC, Client, dense_spec, optimizer  # noqa: E402


def gradient(step, n):
    return (((31 * step + np.arange(n, dtype=np.int64)) % 5) - 2).astype(np.float32)


def last_sent(path):
    last = 0
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == "sent":
                    last = max(last, int(parts[1]))
    return last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--trainer-id", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--elements", type=int, default=4096)
    ap.add_argument("--block", type=int, default=1024)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    n = a.elements
    client = Client(a.master.split(","), a.trainer_id)
    try:
        client.join([dense_spec("w", [n], a.block, optimizer("sgd", 1.0))], ASYNC, 0)
        values = {"w": ((np.arange(n) % 7) - 3).astype(np.float32)}
        client.init_parameters(values)
        start = last_sent(a.log)
        client.step = start  # the next push is step start + 1 (of this new session)
        fd = os.open(a.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, b"session %s from %d\n" % (client.session.encode(), start + 1))
        print("PUSHER ready session=%s from=%d" % (client.session, start + 1), flush=True)
        for s in range(start + 1, a.steps + 1):
            os.write(fd, b"sent %d\n" % s)
            if client.push({"w": gradient(s, n)}) != s:
                raise AssertionError("client.push() numbered step %d as %d" % (s, client.step))
            os.write(fd, b"acked %d\n" % s)
        os.close(fd)
        print("PUSHER done steps=%d" % a.steps, flush=True)
        return 0
    except ParamServerError as e:
        logging.error("%s", e)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
