import grpc
import numpy as np
import pytest

import paramserver
from fakes import Cluster, Master, refuse, serve, status_details  # noqa: F401
from paramserver import errors
from paramserver.client import Client, dense_spec, pb


def specs():
    return [dense_spec("w", [3, 4], 4), dense_spec("b", [3], 4),
            pb.ParameterSpec(name="emb", shape=[0, 2], dtype=1, sparse=True)]


@pytest.fixture
def cluster():
    c = Cluster(n=2)
    yield c
    c.close()


def joined(cluster, trainer_id="t1"):
    client = Client([cluster.address], trainer_id, timeout_s=2, failover_s=3, retry_s=5)
    client.join(specs())
    values = {"w": np.arange(12, dtype=np.float32), "b": np.zeros(3, np.float32)}
    client.init_parameters(values)
    return client, values


def test_calls_before_join_or_init_say_what_to_call_first():
    c = Client("127.0.0.1:1")
    for call, args, first in [(c.pull, ({},), "join"), (c.push, ({},), "join"), (c.tasks, (), "join"),
                              (c.init_parameters, ({},), "join")]:
        with pytest.raises(paramserver.CallOrderError, match=r"before %s\(\): call client.%s" % (first, first)):
            r = call(*args)
            next(r)  # tasks() is a generator
    c.close()
    with pytest.raises(paramserver.ParamServerError, match=r"after close\(\)"):
        c.join(specs())


def test_pull_before_init_parameters_says_to_call_it(cluster):
    c = Client(cluster.address, "t1")
    c.join(specs())
    with pytest.raises(paramserver.CallOrderError, match=r"pull\(\) before init_parameters\(\)"):
        c.pull({})
    c.close()


def test_error_info_decodes_reason_domain_and_metadata():
    d = status_details(grpc.StatusCode.FAILED_PRECONDITION, "not the leader", "NOT_LEADER", {"leader": "h:1"})
    assert errors.error_info(d) == ("NOT_LEADER", "paramserver.dev", {"leader": "h:1"})
    assert errors.error_info(b"") is None


def test_a_refused_join_raises_the_typed_error_with_the_masters_message(cluster):
    a, _ = joined(cluster)
    b = Client(cluster.address, "t2")
    with pytest.raises(paramserver.ModelMismatch) as e:
        b.join([dense_spec("w", [3, 5], 4)])
    assert e.value.reason == "MODEL_MISMATCH" and e.value.code.name == "FAILED_PRECONDITION"
    assert "'out.w' has shape" in str(e.value)
    a.close()


def test_not_leader_fails_over_to_the_leader_named_in_the_metadata(cluster):
    class Standby(Master):
        def GetStatus(self, req, context):
            refuse(context, grpc.StatusCode.FAILED_PRECONDITION, "not the leader", "NOT_LEADER",
                   {"leader": cluster.address})

    server, standby = serve(Standby([]))
    try:
        c = Client([standby], "t1", failover_s=3)
        assert c.status().master_id == "leader" and c.masters == [standby, cluster.address]
    finally:
        server.stop(0)


def test_init_lock_granted_initialises_every_pserver_and_records_done(cluster):
    c, values = joined(cluster)
    assert all(ps.initialised for _, ps in cluster.pservers)
    assert cluster.master.done and all(ps.init_id == cluster.master.done for _, ps in cluster.pservers)
    assert sum(len(ps.values) for _, ps in cluster.pservers) == 3 + 1  # w: 3 blocks of 4, b: 1
    d, _ = joined(cluster, "t2")  # the second trainer finds it done
    assert cluster.master.joins[-1].trainer_id == "t2"
    c.close(), d.close()


def test_push_splits_by_placement_and_numbers_steps_and_parts(cluster):
    c, values = joined(cluster)
    into = {k: np.zeros_like(v) for k, v in values.items()}
    c.push({"w": np.ones(12, np.float32), "b": np.ones(3, np.float32)}, into=into)
    c.push({"w": np.ones(12, np.float32), "b": np.ones(3, np.float32)},
           sparse={"emb": ([7, -1, 7], np.ones((3, 2), np.float32))})
    np.testing.assert_array_equal(into["w"], np.arange(12) - 1)
    pushes = [p for _, ps in cluster.pservers for p in ps.pushes]
    assert {(p.step, p.session) for p in pushes} == {(1, c.session), (2, c.session)}
    rows = [r for p in pushes for r in p.sparse_gradients]
    assert sorted(i for r in rows for i in r.row_ids) == [-1, 7]
    seven = next(r for r in rows if 7 in r.row_ids)
    assert np.frombuffer(seven.data, "<f4").reshape(-1, 2)[list(seven.row_ids).index(7)].tolist() == [2, 2]
    for _, ps in cluster.pservers:
        for step in (1, 2):
            parts = sorted(p.part for p in ps.pushes if p.step == step)
            assert parts == list(range(len(parts)))
    c.close()


def test_a_push_whose_answer_is_lost_is_retried_with_the_same_identity(cluster):
    c, values = joined(cluster)
    cluster.pservers[0][1].fail_pushes = 1
    c.push({"w": np.ones(12, np.float32), "b": np.ones(3, np.float32)})
    ps0 = cluster.pservers[0][1]
    ids = [(p.step, p.part, p.session) for p in ps0.pushes]
    assert len(ids) == len(set(ids)) + 1  # one identity sent twice, applied once
    into = {k: np.zeros_like(v) for k, v in values.items()}
    c.pull(into)
    np.testing.assert_array_equal(into["w"], np.arange(12) - 1)
    c.close()


def test_a_push_refused_overloaded_is_retried_after_the_hint_and_applied_once(cluster):
    c, values = joined(cluster)
    ps0 = cluster.pservers[0][1]
    ps0.overload_pushes = 2
    c.push({"w": np.ones(12, np.float32), "b": np.ones(3, np.float32)})
    assert ps0.overload_pushes == 0
    into = {k: np.zeros_like(v) for k, v in values.items()}
    c.pull(into)
    np.testing.assert_array_equal(into["w"], np.arange(12) - 1)
    c.close()


def test_pull_rows_routes_ids_and_returns_them_in_order(cluster):
    c, _ = joined(cluster)
    rows = c.pull_rows("emb", [5, -3, 1 << 40])
    assert rows.shape == (3, 2) and rows[:, 0].tolist() == [5, -3, float(1 << 40)]
    c.close()


def test_a_wrongly_routed_pull_raises_wrong_shard_naming_the_rows_owner(cluster, monkeypatch):
    c, _ = joined(cluster)
    row = next(r for r in range(100) if paramserver.routing.owner_of_row("emb", r, 2) == 1)
    # a client that sends every row to pserver 0
    monkeypatch.setattr(paramserver.routing.SlotMap, "owners_of_rows", lambda self, table, rows: 0 * rows)
    with pytest.raises(paramserver.WrongShard) as e:
        c.pull_rows("emb", [row])
    assert e.value.reason == "WRONG_SHARD" and e.value.code.name == "FAILED_PRECONDITION"
    assert e.value.metadata == {"owner": "1", "row": str(row), "table": "emb", "pservers": "2", "index": "0"}
    c.close()


def test_tasks_are_yielded_until_the_job_finishes_and_abandoned_ones_handed_back(cluster):
    c, _ = joined(cluster)
    it = c.tasks()
    t = next(it)
    assert c.task_finished(t, 10)
    t2 = next(it)
    it.close()  # leaving the loop hands the held task back
    assert [type(r).__name__ for r in cluster.master.finished] == ["TaskFinishedRequest", "TaskFailedRequest"]
    assert cluster.master.finished[1].handed_back and cluster.master.finished[1].task_id == t2.id
    assert list(c.tasks()) == []
    c.close()


def test_heartbeats_flow_and_close_ends_the_membership(cluster):
    c, _ = joined(cluster)
    import time
    deadline = time.time() + 5
    while cluster.master.heartbeats < 2 and time.time() < deadline:
        time.sleep(0.02)
    assert cluster.master.heartbeats >= 2
    c.close()
    deadline = time.time() + 5
    while cluster.master.attending.is_set() and time.time() < deadline:
        time.sleep(0.02)
    assert not cluster.master.attending.is_set()
