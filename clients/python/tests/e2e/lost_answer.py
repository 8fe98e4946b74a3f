#!/usr/bin/env python3
"""Scripted trainer of the end-to-end GetTask retry test (integration-tests PythonGetTaskRetryTest),
driven against a real master; not collected by pytest.

Joins a job whose model is one parameter `w` (SGD), initialises it, sets the dataset (--data), then
takes tasks through Client.tasks() with the master's channel wrapped so that the answer to the
first GetTask is lost: the call reaches the master, which hands out a task and saves the answer,
and the client sees UNAVAILABLE instead. The client retries that request (the same request_id) and
must be handed the same task back, and the master must count it pending once, not twice. Prints

    RETRY lost=<task id> got=<task id> pending=<n> request_ids=<ids of the two GetTask attempts>

Exit 0 when the retry got the lost answer's task and one task is pending, 2 when not, 1 on a
paramserver error.
"""

import argparse
import importlib.util
import logging
import os
import sys
from typing import Any, List

import grpc
import numpy as np

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from paramserver import ParamServerError  # noqa: E402
from paramserver.client import ASYNC, OPTIONS, Client, dense_spec, optimizer  # noqa: E402


class Lost(grpc.RpcError, grpc.Call):
    """What the client sees when an answer is lost on the wire: UNAVAILABLE."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the answer was lost (scripted by the test)"

    def trailing_metadata(self) -> Any:
        return ()

    def initial_metadata(self) -> Any:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> Any:
        return None

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: Any) -> bool:
        return False


class LoseFirstGetTask(grpc.UnaryUnaryClientInterceptor):
    def __init__(self) -> None:
        self.lost: List[int] = []
        self.request_ids: List[str] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if not details.method.endswith("/GetTask"):
            return continuation(details, request)
        self.request_ids.append(request.request_id)
        answer = continuation(details, request)
        if self.lost:
            return answer
        r = answer.result()  # the master handed the task out and saved the answer
        self.lost = [t.id for t in [r.task] + list(r.more_tasks)] if r.HasField("task") else [-1]
        raise Lost()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    client = Client(a.master, "py-retry")
    lose = LoseFirstGetTask()
    client._channels[a.master] = grpc.intercept_channel(grpc.insecure_channel(a.master, options=OPTIONS), lose)
    try:
        client.join([dense_spec("w", [16], 16, optimizer("sgd", 0.1))], ASYNC, 0)
        client.init_parameters({"w": np.zeros(16, np.float32)})
        client.set_dataset([os.path.abspath(a.data)])
        tasks = client.tasks()
        got = next(tasks)
        pending = client.status().tasks.pending
        print("RETRY lost=%s got=%d pending=%d request_ids=%s" % (
            ",".join(map(str, lose.lost)), got.id, pending, ",".join(lose.request_ids)), flush=True)
        tasks.close()  # hands the task back
        same_id = len(lose.request_ids) == 2 and lose.request_ids[0] == lose.request_ids[1] != ""
        return 0 if lose.lost == [got.id] and pending == 1 and same_id else 2
    except ParamServerError as e:
        logging.error("%s", e)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
