"""paramserver.torch.Embedding and EmbeddingBag against the fake cluster (rows never pushed read as
[id, id, ...]; a push applies SGD with learning rate 1 to a row starting from zeros)."""

import numpy as np
import pytest
import torch
from torch import nn

import paramserver
from fakes import Cluster
from paramserver.client import Client, optimizer
from paramserver.torch import Embedding, EmbeddingBag, Trainer, lookahead


class Model(nn.Module):
    def __init__(self, emb):
        super().__init__()
        self.emb, self.head = emb, nn.Linear(3, 1)

    def forward(self, ids):
        return self.head(self.emb(ids))


@pytest.fixture
def cluster():
    c = Cluster(n=2, block_size=8)
    yield c
    c.close()


def trained(cluster, emb):
    model = Model(emb)
    return model, Trainer(Client(cluster.address, "py", timeout_s=2, failover_s=3, retry_s=5), model).join()


def row_pulls(cluster, table):
    return sum(1 for _, ps in cluster.pservers for r in ps.pulls for t in r.sparse_rows if t.name == table)


def test_rows_are_read_once_per_batch_and_their_gradients_pushed_with_the_step(cluster):
    model, t = trained(cluster, Embedding(None, 3, optimizer_config=optimizer("adagrad", 0.05), init_stddev=0.1))
    spec = next(p for p in cluster.master.joins[0].parameters if p.sparse)
    assert (spec.name, list(spec.shape), spec.optimizer.kind, round(spec.init_stddev, 3)) == (
        "emb", [0, 3], spec.optimizer.ADAGRAD, 0.1)
    ids = torch.tensor([[5, 7, 5], [9, 5, 1 << 40]])
    before = row_pulls(cluster, "emb")
    out = model.emb(ids)
    assert row_pulls(cluster, "emb") - before <= 2  # one request per owning pserver, not per id
    torch.testing.assert_close(out[1, 2], torch.full((3,), float(1 << 40)))
    weights = torch.arange(18, dtype=torch.float32).reshape(2, 3, 3)
    (out * weights).sum().backward()
    t.step()
    t.flush()
    want = {i: np.zeros(3, np.float32) for i in (5, 7, 9, 1 << 40)}
    for (b, k), i in np.ndenumerate(ids.numpy()):
        want[int(i)] += weights[b, k].numpy()
    for i, g in want.items():
        np.testing.assert_allclose(t.client.pull_rows("emb", [i])[0], -g)  # the fake: 0 - gradient
    assert {p.step for _, ps in cluster.pservers for p in ps.pushes if p.sparse_gradients} == {1}


def test_a_lookup_after_a_push_reads_the_pushed_rows_read_my_writes(cluster):
    model, t = trained(cluster, Embedding(None, 3))
    model.emb(torch.tensor([4])).sum().backward()
    t.step()  # ASYNC: the push is in flight
    assert t.in_flight("emb") == {4}
    torch.testing.assert_close(model.emb(torch.tensor([4, 6])).detach(),
                               torch.tensor([[-1.0] * 3, [6.0] * 3]))  # waited for the push, then read
    assert t.in_flight("emb") == set()


def test_padding_rows_are_zeros_take_no_gradient_and_are_never_read(cluster):
    model, t = trained(cluster, Embedding(None, 3, padding_idx=0))
    out = model.emb(torch.tensor([[0, 2], [3, 0]]))
    torch.testing.assert_close(out.detach(), torch.tensor([[[0.0] * 3, [2.0] * 3], [[3.0] * 3, [0.0] * 3]]))
    out.sum().backward()
    t.step()
    t.flush()
    rows = [r for _, ps in cluster.pservers for q in ps.pulls + ps.pushes
            for tb in list(getattr(q, "sparse_rows", [])) + list(getattr(q, "sparse_gradients", [])) for r in tb.row_ids]
    assert 0 not in rows and {2, 3} <= set(rows)


@pytest.mark.parametrize("mode,weighted", [("sum", False), ("mean", False), ("sum", True)])
def test_embedding_bag_matches_torchs_with_the_same_rows(cluster, mode, weighted):
    n = 12
    model, t = trained(cluster, EmbeddingBag(n, 3, mode=mode, padding_idx=11))
    ref = nn.EmbeddingBag(n, 3, mode=mode, padding_idx=11)
    with torch.no_grad():
        ref.weight.copy_(torch.arange(n, dtype=torch.float32)[:, None].expand(n, 3))
        ref.weight[11] = 0
    ids = torch.tensor([3, 5, 3, 11, 7, 2, 11])
    offsets = torch.tensor([0, 3, 5])
    psw = torch.tensor([0.5, 2.0, 1.0, 3.0, 1.5, 1.0, 2.0]) if weighted else None
    got, want = model.emb(ids, offsets, psw), ref(ids, offsets, per_sample_weights=psw)
    torch.testing.assert_close(got, want)
    g = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0], [2.0, 2.0, 2.0]])
    (got * g).sum().backward()
    (want * g).sum().backward()
    t.step()
    t.flush()
    for i in (2, 3, 5, 7):
        np.testing.assert_allclose(t.client.pull_rows("emb", [i])[0], -ref.weight.grad[i].numpy(), rtol=1e-6)
    assert t.client.pull_rows("emb", [11])[0].tolist() == [11.0] * 3  # the padding row: no gradient pushed


def test_prefetch_reads_the_next_batch_while_this_one_trains(cluster):
    model, t = trained(cluster, Embedding(None, 3))
    batches = [torch.tensor([1, 2]), torch.tensor([2, 3]), torch.tensor([4])]
    lookups = []
    for ids, nxt in lookahead(batches):
        before = t.rows.misses
        model.emb(ids).sum().backward()
        lookups.append(t.rows.misses - before)  # rows the lookup had to pull itself
        t.step()
        if nxt is not None:
            model.emb.prefetch(nxt)  # row 2 is carried by the push in flight: it comes back with its answer
    assert lookups == [2, 0, 0] and t.rows.hits >= 3  # 3 and 4 came by prefetch; 2 with the push's answer
    assert t.rows.pulled_rows == 4  # 1, 2, then 3 and 4: row 2 is not pulled again after the push
    t.flush()
    np.testing.assert_allclose(t.client.pull_rows("emb", [2])[0], [-2.0] * 3)


def test_state_dict_exports_the_rows_as_nn_embeddings_weight(cluster):
    model, t = trained(cluster, Embedding(6, 3, padding_idx=5))
    state = model.state_dict()
    assert list(state) == ["emb.weight", "head.weight", "head.bias"] or set(state) == {
        "emb.weight", "head.weight", "head.bias"}
    plain = nn.Embedding(6, 3, padding_idx=5)
    plain.load_state_dict({"weight": state["emb.weight"]})
    torch.testing.assert_close(plain.weight[:5].detach(), torch.arange(5.0)[:, None].expand(5, 3))
    assert plain.weight[5].abs().sum() == 0
    with pytest.raises(RuntimeError, match="live on the pservers"):
        model.load_state_dict(state)


def test_bad_use_says_what_is_wrong(cluster):
    emb = Embedding(4, 2)
    with pytest.raises(paramserver.CallOrderError, match=r"before Trainer.join\(\)"):
        emb(torch.tensor([1]))
    model, t = trained(cluster, Embedding(4, 3))
    with pytest.raises(IndexError, match=r"out of range \[0, 4\): 9"):
        model.emb(torch.tensor([9]))
    with pytest.raises(TypeError, match="integer tensor"):
        model.emb(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="per_sample_weights needs mode 'sum'"):
        EmbeddingBag(4, 2)(torch.tensor([[1]]), per_sample_weights=torch.tensor([[1.0]]))
    with pytest.raises(ValueError, match="two sparse modules name one table"):
        Trainer(t.client, nn.ModuleDict({"a": Embedding(4, 2, table="x"), "b": Embedding(4, 2, table="x")}))
