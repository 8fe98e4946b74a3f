"""The client through live scaling (docs/explanation/elastic.md, "Trainers"), against the fakes: it
routes by the committed placement map, and resends what a pserver refuses with MOVED, re-split by the
map, with the same identity, origin = the first server's index + 1 and a part of its own."""

import threading
import time

import numpy as np
import pytest

from fakes import Cluster
from paramserver import elastic, routing
from paramserver.client import Client, pb, placement_pb2 as pl, tensor_pb2
from test_client import specs

ONES = {"w": np.ones(12, np.float32), "b": np.ones(3, np.float32)}
IDS = list(range(40))


@pytest.fixture
def cluster():
    c = Cluster(n=2)
    yield c
    c.close()


def joined(cluster):
    client = Client([cluster.address], "t1", timeout_s=3, failover_s=3, retry_s=10)
    client.join(specs())
    values = {"w": np.arange(12, dtype=np.float32), "b": np.zeros(3, np.float32)}
    client.init_parameters(values)
    return client, values


def to_proto(m):
    return pl.PlacementMap(epoch=m.epoch, pservers=m.pservers, slots=m.slots, slot_owners=m.slot_owners,
                           dense_owners=[pl.BlockOwner(name=n, block=b, owner=o)
                                         for (n, b), o in sorted(m.block_owners.items())])


def moved_map(old, epoch, frm, to, blocks=(), slots=None):
    """`old` with `blocks` and the slots of `frm` that `slots` picks (default: every other one) on `to`."""
    owners = list(old.slot_owners)
    for s, o in enumerate(owners):
        if o == frm and (slots(s) if slots else s % 4 < 2):
            owners[s] = to
    block_owners = dict(old.block_owners)
    for b in blocks:
        block_owners[b] = to
    return routing.SlotMap(epoch, max(old.pservers, to + 1), owners, block_owners)


def hand_over(cluster, new, frm, to):
    """Moves what `to` owns under `new` from pserver `frm` to it (values and rows), as MoveOut does."""
    a, b = cluster.pservers[frm][1], cluster.pservers[to][1]
    for key in [k for k in a.values if new.owner_of_block(*k) == to]:
        b.values[key] = a.values.pop(key)
    for key in [k for k in a.rows if new.owner_of_row(*k) == to]:
        b.rows[key] = a.rows.pop(key)


def begin(cluster, new, frm, to, publish_move=True, client=None):
    """The move to `new` is frozen: `frm` refuses what it gave away with MOVED; not committed yet.
    With `client`, returns once its map shows the move: a refusal that came before would be taken
    for a rolled-back move (resent by the old map and refused again), as a real trainer does."""
    hand_over(cluster, new, frm, to)
    for _, ps in cluster.pservers:
        ps.slot_map = new
    if publish_move:
        cluster.master.publish(move=pl.SlotMove(epoch=new.epoch, to=to, slot_count=new.slots, id="m1", **{"from": frm}))
        if client is not None:
            deadline = time.monotonic() + 5
            while not (client.cluster_map is not None and client.cluster_map.HasField("placement_move")
                       and client.cluster_map.placement_move.epoch == new.epoch):
                assert time.monotonic() < deadline, "the client never saw the move"
                time.sleep(0.01)


def commit(cluster, new):
    cluster.master.publish(placement=to_proto(new), move=None)


def later(seconds, fn, *args):
    t = threading.Timer(seconds, fn, args)
    t.start()
    return t


def expected_after(values, steps):
    return {k: v - steps for k, v in values.items()}


def check_values(c, values, steps, ids=IDS):
    into = {k: np.zeros_like(v) for k, v in values.items()}
    c.pull(into)
    for k, v in expected_after(values, steps).items():
        np.testing.assert_array_equal(into[k], v, err_msg=k)
    np.testing.assert_array_equal(c.pull_rows("emb", ids), -steps * np.ones((len(ids), 2), np.float32))


def resent(cluster):
    """Every resent piece on any pserver: (pserver, request)."""
    return [(i, p) for i, (_, ps) in enumerate(cluster.pservers) for p in ps.pushes if p.origin]


def push(c, into=None):
    return c.push(ONES, sparse={"emb": (IDS, np.ones((len(IDS), 2), np.float32))}, into=into)


def test_a_push_refused_with_moved_waits_for_the_commit_and_resends_its_pieces_with_origin_and_fresh_parts(cluster):
    c, values = joined(cluster)
    push(c)
    old = c._routing()
    assert old.epoch == 0 and old.owner_of_block("w", 0) == 1
    new = moved_map(old, 1, frm=1, to=0, blocks=[("w", 0)])
    begin(cluster, new, 1, 0, client=c)
    later(0.4, commit, cluster, new)
    t0 = time.monotonic()
    into = {k: np.zeros_like(v) for k, v in values.items()}
    assert push(c, into=into) == 2
    assert time.monotonic() - t0 >= 0.35  # waited for the epoch, not resent by the old map
    assert c._routing().epoch == 1 and c.moved_requests >= 1
    pieces = resent(cluster)
    assert pieces and {(p.trainer_id, p.session, p.step, p.origin) for _, p in pieces} == {("t1", c.session, 2, 2)}
    parts = [p.part for _, p in pieces]
    assert len(parts) == len(set(parts)) and all(elastic.FIRST_PART <= x <= elastic.LAST_PART for x in parts)
    assert {i for i, _ in pieces} == {0, 1}  # w#0 and the moved rows to 0, the rest back to 1
    for i, p in pieces:  # each piece went to the owner the new map names
        assert all(new.owner_of_block(g.name, g.block) == i for g in p.gradients)
        assert all(new.owner_of_row(t.name, r) == i for t in p.sparse_gradients for r in t.row_ids)
    np.testing.assert_array_equal(into["w"], values["w"] - 2)  # the pieces' returned values merged
    check_values(c, values, 2)
    # the next step is planned by the new map: nothing refused, nothing resent
    before = c.moved_requests
    push(c)
    assert c.moved_requests == before and all(p.origin == 0 for _, ps in cluster.pservers for p in ps.pushes
                                              if p.step == 3)
    check_values(c, values, 3)
    c.close()


def test_a_move_rolled_back_resends_to_the_old_owner_as_a_piece_of_its_own(cluster):
    c, values = joined(cluster)
    old = c._routing()
    new = moved_map(old, 1, frm=1, to=0, blocks=[("w", 0)])
    begin(cluster, new, 1, 0, client=c)

    def rollback():
        hand_over(cluster, old, 0, 1)
        for _, ps in cluster.pservers:
            ps.slot_map = old
        cluster.master.publish(move=None)
    later(0.3, rollback)
    push(c)
    assert c._routing().epoch == 0
    pieces = resent(cluster)
    assert [(i, p.origin, p.part, p.step) for i, p in pieces] == [(1, 2, elastic.FIRST_PART, 1)]
    check_values(c, values, 1)
    c.close()


def test_refused_again_by_a_stale_map_each_cut_gets_new_parts_and_a_lost_answer_is_resent_unchanged(cluster):
    c, values = joined(cluster)
    old = c._routing()
    new = moved_map(old, 1, frm=1, to=0, blocks=[("w", 0)])
    # frozen, but the cluster map shows neither the move nor the commit yet: the client takes the
    # move as rolled back, resends by its old map, is refused again, and backs off until the commit
    begin(cluster, new, 1, 0, publish_move=False)
    cluster.pservers[0][1].fail_pushes = 1  # a resent piece applied, but its answer is lost
    cluster.pservers[0][1].fail_if = lambda req: req.origin != 0
    later(0.5, commit, cluster, new)
    push(c)
    pieces = resent(cluster)
    ids = [(i, p.part) for i, p in pieces]
    again = [x for x in set(ids) if ids.count(x) > 1]
    assert len(again) == 1 and again[0][0] == 0  # the piece whose answer was lost, sent twice unchanged
    assert len({p.part for _, p in pieces}) == len(set(ids))  # no part given twice for the step
    assert sum(1 for i, p in pieces if i == 1) >= 2  # refused again at least once (stale map)
    assert all(p.origin == 2 for _, p in pieces)
    check_values(c, values, 1)
    c.close()


def test_an_unregistered_pserver_that_owns_nothing_is_taken_as_moved(cluster):
    c, values = joined(cluster)
    old = c._routing()
    everything = moved_map(old, 2, frm=1, to=0, blocks=list(old.block_owners), slots=lambda s: True)
    hand_over(cluster, everything, 1, 0)
    for _, ps in cluster.pservers:
        ps.slot_map = everything
    cluster.servers[1].stop(0)  # emptied by a shrink, then shut down
    cluster.master.publish(placement=to_proto(everything), registered={0})
    deadline = time.monotonic() + 5
    while c._routing().epoch != 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert c._routing().owning() == [0]
    # a request planned for pserver 1 before the shrink
    req = c._new_push(1, 0)
    req.gradients.append(c._block(next(b for b in c.placement.blocks if b.pserver == 1), ONES))
    t0 = time.monotonic()
    c._send(1, "PushGradients", req, "pushing to")
    c.step = 1
    assert time.monotonic() - t0 < 2
    assert [(i, p.origin, p.part) for i, p in resent(cluster)] == [(0, 2, elastic.FIRST_PART)]
    push(c)  # routed to pserver 0 alone: every block and row of step 2 there
    step2 = [p for p in cluster.pservers[0][1].pushes if p.step == 2]
    assert sum(len(p.gradients) for p in step2) == 4 and all(p.origin == 0 for p in step2)
    assert sorted(r for p in step2 for t in p.sparse_gradients for r in t.row_ids) == IDS
    assert not [p for p in cluster.pservers[1][1].pushes if p.step == 2]
    c.close()


def test_pulls_refused_with_moved_are_re_split_and_sent_again(cluster):
    c, values = joined(cluster)
    push(c)
    old = c._routing()
    new = moved_map(old, 1, frm=1, to=0, blocks=[("w", 0), ("w", 2)])
    begin(cluster, new, 1, 0, client=c)
    later(0.3, commit, cluster, new)
    check_values(c, values, 1)
    refused = [p for p in cluster.pservers[1][1].pulls if any(b.name == "w" and b.block == 0 for b in p.blocks)]
    assert refused and c.moved_requests >= 1 and c._routing().epoch == 1
    c.close()


def test_resent_parts_start_in_the_upper_half_and_are_never_given_twice_for_a_step():
    parts = elastic.ResentParts()
    assert [parts.next(7), parts.next(7), parts.next(8), parts.next(7)] == [32768, 32769, 32768, 32770]
    for _ in range(elastic.LAST_PART - 32770):
        parts.next(7)
    with pytest.raises(RuntimeError, match="more than 32768 resent pieces"):
        parts.next(7)


def test_split_push_keeps_identity_flags_and_a_first_origin_and_cuts_rows_by_their_bytes():
    m = routing.SlotMap(3, 2, [s % 2 for s in range(routing.slots_for(2))], {("w", 0): 1, ("w", 1): 0})
    rows = pb.SparseRows(name="emb", row_ids=list(range(10)), dtype=tensor_pb2.FLOAT32,
                         data=np.arange(20, dtype="<f4").tobytes())
    req = pb.PushGradientsRequest(trainer_id="t", session="s", step=4, part=2, return_values=True, gradients=[
        tensor_pb2.TensorBlock(name="w", block=0), tensor_pb2.TensorBlock(name="w", block=1)], sparse_gradients=[rows])
    parts = elastic.ResentParts()
    pieces = elastic.split_push(1, req, m, parts.next)
    assert [o for o, _ in pieces] == [0, 1]
    assert all((p.trainer_id, p.session, p.step, p.origin, p.return_values) == ("t", "s", 4, 2, True) for _, p in pieces)
    assert [p.part for _, p in pieces] == [32768, 32769]
    got = {}
    for o, p in pieces:
        for t in p.sparse_gradients:
            vals = np.frombuffer(t.data, "<f4").reshape(-1, 2)
            for r, v in zip(t.row_ids, vals):
                assert m.owner_of_row("emb", r) == o
                got[r] = v.tolist()
    assert got == {r: [2 * r, 2 * r + 1] for r in range(10)}
    # a piece of a piece keeps its first origin
    again = elastic.split_push(0, pieces[0][1], m, parts.next)
    assert [(o, p.origin, p.part) for o, p in again] == [(0, 2, 32770)]
    # a keep-pace push without gradients still goes, as one piece
    assert [(o, p.origin) for o, p in elastic.split_push(1, pb.PushGradientsRequest(step=5), m, parts.next)] == [(1, 2)]
