import os

import numpy as np
import pytest
import torch

import paramserver
from conftest import HERE
from fakes import Cluster
from paramserver import recordio
from paramserver.client import SYNC, Client, ma, optimizer
from paramserver.torch import Trainer
from paramserver.torch.models import MLP, softmax


def test_mlp_has_javas_parameter_names_layout_and_init():
    m = MLP(32, 10, hidden=(128, 64))
    assert [(n, list(p.shape)) for n, p in m.named_parameters()] == [
        ("hidden1.w", [32, 128]), ("hidden1.b", [128]), ("hidden2.w", [128, 64]), ("hidden2.b", [64]),
        ("out.w", [64, 10]), ("out.b", [10])]
    assert all(float(p.abs().sum()) == 0 for p in softmax(4, 3).parameters())  # Java: zeros
    assert abs(float(m.hidden1.w.std()) - (2 / 32) ** 0.5) < 0.03  # He normal before a relu


def test_mlp_loss_gradient_is_javas_softmax_cross_entropy():
    torch.manual_seed(1)
    m = softmax(4, 3)
    with torch.no_grad():
        m.out.w.normal_()
    x, y = torch.randn(5, 4), torch.tensor([0, 2, 1, 1, 0])
    MLP.loss(m(x), y).backward()
    p = torch.softmax(x @ m.out.w + m.out.b, 1).detach().numpy()
    delta = (p - np.eye(3)[y.numpy()]) / 5  # Java's Mlp.trainStep
    np.testing.assert_allclose(m.out.w.grad.numpy(), x.numpy().T @ delta, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.out.b.grad.numpy(), delta.sum(0), rtol=1e-5, atol=1e-6)


@pytest.fixture
def cluster():
    c = Cluster(n=2, block_size=8)
    yield c
    c.close()


def test_a_trainer_pulls_into_the_module_in_place_and_steps(cluster):
    torch.manual_seed(0)
    m = MLP(4, 3, hidden=(5,))
    before = m.hidden1.w.detach().clone()
    w = m.hidden1.w
    t = Trainer(Client(cluster.address, "py"), m, optimizer("sgd", 0.5)).join()
    assert cluster.master.joins[0].parameters[0].optimizer.learning_rate == 0.5
    torch.testing.assert_close(m.hidden1.w.detach(), before)  # it initialised the job: same values
    MLP.loss(m(torch.randn(6, 4)), torch.tensor([0, 1, 2, 0, 1, 2])).backward()
    grad = m.hidden1.w.grad.clone()
    t.step()
    torch.testing.assert_close(m.hidden1.w.detach(), before)  # ASYNC: one batch of lag
    t.flush()  # (the next step() or the task's end writes them)
    assert m.hidden1.w is w  # the same Parameter, written in place
    torch.testing.assert_close(m.hidden1.w.detach(), before - grad)  # the fake applies SGD, lr 1
    t.client.close()


def test_batches_iterate_the_tasks_and_report_each_finished(cluster):
    path = os.path.join(HERE, "fixtures", "dense-snappy.recordio")
    cluster.master.todo = [ma.Task(id=i, epoch=3, chunks=[ma.Chunk(path=path, offset=o, length=n, records=r)])
                           for i, (o, n, r) in enumerate(recordio.chunks(path))]
    m = softmax(4, 3)
    t = Trainer(Client(cluster.address, "py"), m).join()
    seen = []
    for x, y in t.batches(batch_size=4, features=4):
        assert x.dtype == torch.float32 and y.dtype == torch.int64
        seen.append(len(y))
        MLP.loss(m(x), y).backward()
        t.step()
    assert seen == [4, 1, 4, 1, 2]
    assert [(f.task_id, f.epoch, f.records) for f in cluster.master.finished] == [(0, 3, 5), (1, 3, 5), (2, 3, 2)]
    t.client.close()


def test_a_module_that_differs_from_the_jobs_model_is_refused_at_join(cluster):
    a = Trainer(Client(cluster.address, "a"), softmax(4, 3)).join()
    with pytest.raises(paramserver.ModelMismatch, match="shape"):
        Trainer(Client(cluster.address, "b"), softmax(4, 2)).join()
    with pytest.raises(paramserver.ModelMismatch, match="out.w"):
        Trainer(Client(cluster.address, "c"), softmax(5, 3)).join(adopt=True)
    a.client.close()


def test_step_before_join_says_to_join_first():
    with pytest.raises(paramserver.CallOrderError, match=r"step\(\) before join\(\): call trainer.join\(\) first"):
        Trainer(Client("127.0.0.1:1"), softmax(4, 3)).step()


def test_in_sync_mode_a_step_writes_the_new_values_before_it_returns(cluster):
    torch.manual_seed(0)
    m = MLP(4, 3, hidden=(5,))
    before = m.hidden1.w.detach().clone()
    t = Trainer(Client(cluster.address, "py"), m, optimizer("sgd", 0.5), mode=SYNC).join()
    MLP.loss(m(torch.randn(6, 4)), torch.tensor([0, 1, 2, 0, 1, 2])).backward()
    grad = m.hidden1.w.grad.clone()
    t.step()  # no lag: the push, then a pull (min_step) before it returns
    torch.testing.assert_close(m.hidden1.w.detach(), before - grad)
    assert t._pending is None
    t.client.close()


def test_pushes_sent_ahead_go_one_step_at_a_time_and_retry_with_their_identity(cluster):
    m = softmax(4, 3)
    t = Trainer(Client(cluster.address, "py", timeout_s=2), m).join()
    for _, ps in cluster.pservers:
        ps.fail_pushes = 1  # the first push is applied but its answer lost: retried as a duplicate
    for _ in range(3):
        MLP.loss(m(torch.randn(2, 4)), torch.tensor([0, 1])).backward()
        t.step()
    t.flush()
    for _, ps in cluster.pservers:
        steps = [r.step for r in ps.pushes]
        assert steps == sorted(steps) and set(steps) <= {1, 2, 3}  # step s+1 after s was answered
        assert ps.step == len(set(steps))  # the retry was not applied twice
        assert {r.session for r in ps.pushes} <= {t.client.session}
    t.client.close()
