#!/usr/bin/env python3
"""examples/python/train_mlp.py with a line on stdout for each task it takes ("TASK-TAKEN <pass>
<id>") and finishes ("TASK-DONE <pass> <id>"), so that an end-to-end test (integration-tests
PythonTrainerKillTest) knows when this trainer holds a task; same arguments, exit codes and
PYRESULT line. Runs in this process (the test kills this very process). Not collected by pytest."""

import importlib.util
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package
    sys.path.insert(0, os.path.join(REPO, "clients", "python"))
from paramserver.client import Client  # noqa: E402

_tasks, _finished = Client.tasks, Client.task_finished


def tasks(self):
    inner = _tasks(self)
    try:
        for t in inner:
            print("TASK-TAKEN %d %d" % (getattr(t, "pass"), t.id), flush=True)
            yield t
    finally:
        inner.close()  # hands held tasks back at once, as the unwrapped generator does


def task_finished(self, task, records, loss=()):
    accepted = _finished(self, task, records, loss)
    print("TASK-DONE %d %d" % (getattr(task, "pass"), task.id), flush=True)
    return accepted


Client.tasks, Client.task_finished = tasks, task_finished
sys.argv[0] = os.path.join(REPO, "examples", "python", "train_mlp.py")
runpy.run_path(sys.argv[0], run_name="__main__")
