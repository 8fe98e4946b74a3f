"""Your own data and devices: trainer.dataset() under a DataLoader with worker processes, parameter
groups, the host-copy path of modules on another device, and the S3 request signer."""

import datetime
import hashlib
import os
import subprocess
import sys

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from fakes import Cluster
from paramserver import recordio, s3
from paramserver.client import Client, ma, optimizer
from paramserver.torch import TaskBatch, Trainer
from paramserver.v1 import example_pb2


@pytest.fixture
def cluster():
    c = Cluster(n=2, block_size=8, tasks=0)
    yield c
    c.close()


def _tasks(cluster, tmp_path, n_tasks=4, records=10):
    """n_tasks tasks of one chunk each, record r of task t with the label t * 100 + r."""
    cluster.master.todo = []
    for t in range(n_tasks):
        path = str(tmp_path / ("t%d.recordio" % t))
        with recordio.Writer(path, recordio.GZIP, records) as w:
            for r in range(records):
                w.write(example_pb2.Example(dense=[float(t), float(r)], label=t * 100 + r).SerializeToString())
        (offset, length, _), = recordio.chunks(path)
        cluster.master.todo.append(ma.Task(id=t, epoch=1, chunks=[ma.Chunk(path=path, offset=offset, length=length)]))


def test_a_dataloader_with_workers_reads_each_task_once_and_the_loop_reports_it_after_training(cluster, tmp_path):
    _tasks(cluster, tmp_path)
    module = nn.Linear(2, 1)
    trainer = Trainer(Client(cluster.address, "py"), module).join()
    loader = DataLoader(trainer.dataset(batch_size=4), batch_size=None, num_workers=2,
                        multiprocessing_context="spawn")
    labels, finished_when = [], []
    for x, y in trainer.loop(loader):
        labels += y.tolist()
        finished_when.append(len(cluster.master.finished))
        module.zero_grad()
        module(x).sum().backward()
        trainer.step()
    assert sorted(labels) == [t * 100 + r for t in range(4) for r in range(10)]  # every record once
    done = cluster.master.finished
    assert sorted(f.task_id for f in done) == [0, 1, 2, 3] and all(f.records == 10 for f in done)
    assert all(isinstance(f, ma.TaskFinishedRequest) and f.trainer_id == "py" for f in done)
    assert finished_when[:3] == [0, 0, 0]  # a task is reported after its batches were trained, not read
    assert trainer.tasks_done == 4 and trainer.records_done == 40
    assert trainer.client.current_pass == 1  # the pass after the last trained, as Client.tasks() leaves it
    trainer.client.close()


def test_leaving_the_loop_early_hands_the_open_task_back(cluster, tmp_path):
    _tasks(cluster, tmp_path, n_tasks=2)
    trainer = Trainer(Client(cluster.address, "py"), nn.Linear(2, 1)).join()
    for x, y in trainer.loop(iter(trainer.dataset(batch_size=4))):  # no workers: this process reads
        trainer.step()
        break
    reports = cluster.master.finished
    # handed back (by the loop and by the reader: the master ignores a second report of an epoch)
    assert {(type(f).__name__, f.task_id, f.handed_back) for f in reports} == {("TaskFailedRequest", 0, True)}
    trainer.client.close()


def test_a_batch_carries_its_task():
    tag = TaskBatch(task_id=3, epoch=1, pass_=0, records=10, last=True)
    assert (tag.task_id, tag.last) == (3, True)


def test_param_groups_give_their_parameters_their_own_optimizer(cluster):
    module = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    Trainer(Client(cluster.address, "py"), module, optimizer("sgd", 0.1),
            param_groups=[{"params": module[1].parameters(), "optimizer": optimizer("adam", 0.01)}]).join()
    kinds = {p.name: (p.optimizer.learning_rate, p.optimizer.kind) for p in cluster.master.joins[0].parameters}
    assert kinds["1.weight"] == kinds["1.bias"] == (pytest.approx(0.01), optimizer("adam").kind)
    assert kinds["0.weight"] == (pytest.approx(0.1), optimizer("sgd").kind)


def test_param_groups_name_what_is_wrong(cluster):
    module, other = nn.Linear(2, 1), nn.Linear(2, 1)
    with pytest.raises(ValueError, match="not the module's"):
        Trainer(Client(cluster.address, "py"), module, param_groups=[{"params": other.parameters(),
                                                                       "optimizer": optimizer()}])
    with pytest.raises(ValueError, match=r"param_groups\[0\] must be"):
        Trainer(Client(cluster.address, "py"), module, param_groups=[{"params": module.parameters(), "lr": 0.1}])


def test_the_host_copy_path_moves_values_and_gradients_through_host_memory(cluster):
    """What a module on a CUDA device goes through (host_copy forces it on the CPU, the only device
    here): the pulls write host tensors, copied into the parameters; gradients are read to host."""
    torch.manual_seed(0)
    module = nn.Linear(3, 2)
    before = module.weight.detach().clone()
    trainer = Trainer(Client(cluster.address, "py"), module, optimizer("sgd", 0.5), host_copy=True).join()
    assert trainer.host["weight"].data_ptr() != module.weight.data_ptr()  # a separate host copy
    torch.testing.assert_close(module.weight.detach(), before)
    module(torch.randn(4, 3)).sum().backward()
    grad = module.weight.grad.clone()
    trainer.step()
    trainer.flush()
    torch.testing.assert_close(module.weight.detach(), before - grad)  # the fake applies SGD, lr 1
    torch.testing.assert_close(trainer.host["weight"], before - grad)
    trainer.client.close()


def test_a_parameter_that_is_not_float32_is_refused(cluster):
    with pytest.raises(ValueError, match="must be float32"):
        Trainer(Client(cluster.address, "py"), nn.Linear(2, 1).double())


def test_s3_requests_are_signed_as_aws_documents():
    """AWS's Signature Version 4 example (GET Object, bytes 0-9 of examplebucket/test.txt)."""
    settings = s3.S3Settings(access_key="AKIAIOSFODNN7EXAMPLE", secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    headers = s3._signed(settings, "GET", "examplebucket.s3.amazonaws.com", "/test.txt",
                         hashlib.sha256(b"").hexdigest(), {"Range": "bytes=0-9"},
                         datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc))
    assert headers["authorization"].endswith(
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        " Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


def test_s3_addresses_and_settings(monkeypatch):
    monkeypatch.setenv("PARAMSERVER_S3_ENDPOINT", "http://127.0.0.1:9000")
    monkeypatch.delenv("PARAMSERVER_S3_PATH_STYLE", raising=False)
    st = s3.S3Settings.from_env()
    assert s3._url(st, "b", "dir/a b.recordio") == ("http://127.0.0.1:9000/b/dir/a%20b.recordio", "127.0.0.1:9000",
                                                  "/b/dir/a%20b.recordio")
    aws = s3.S3Settings(region="eu-west-1")
    assert s3._url(aws, "b", "k")[0] == "https://b.s3.eu-west-1.amazonaws.com/k"
    with pytest.raises(ValueError, match="not an s3://bucket/key"):
        s3._split("s3://bucket-only")


def test_an_unreachable_store_names_the_object_and_the_endpoint():
    st = s3.S3Settings(endpoint="http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(s3.S3Error, match=r"GET s3://b/k: cannot reach http://127.0.0.1:9"):
        s3.read_range("s3://b/k", 0, 10, st)


# Forking a process whose gRPC is in use leaves gRPC unusable in that process afterwards (later calls
# hang), so the fork is made in a process of its own, not in the one that runs the other tests.
FORKED_LOADER = """
import sys
from pathlib import Path
from torch import nn
from torch.utils.data import DataLoader
from fakes import Cluster
from paramserver.client import Client
from paramserver.torch import Trainer
from test_data import _tasks

cluster = Cluster(n=2, block_size=8, tasks=0)
try:
    _tasks(cluster, Path(sys.argv[1]), n_tasks=1)
    trainer = Trainer(Client(cluster.address, "py"), nn.Linear(2, 1)).join()
    loader = DataLoader(trainer.dataset(batch_size=4), batch_size=None, num_workers=1,
                        multiprocessing_context="fork")
    try:
        next(iter(loader))
        print("NOT REFUSED")
    except RuntimeError as e:
        print("REFUSED: %s" % e)
    trainer.client.close()
finally:
    cluster.close()
"""


def test_forked_dataloader_workers_are_refused_with_what_to_do(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([sys.executable, "-c", FORKED_LOADER, str(tmp_path)], cwd=os.path.dirname(__file__),
                         env=env, capture_output=True, text=True, timeout=120)
    assert "REFUSED:" in run.stdout and "must be spawned, not forked" in run.stdout, run.stdout + run.stderr
