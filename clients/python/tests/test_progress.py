"""A trainer's progress endpoint (paramserver.status: what the master's console reads) and the task
shuffle shared with the Java trainer."""

import json
import urllib.error
import urllib.request

import pytest

from paramserver.status import Progress, StatusServer, advertised_host


def get(port, path="/admin/status", token="s3cret"):
    headers = {"Authorization": "Bearer " + token} if token is not None else {}
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_status_answers_the_progress_as_a_java_trainer_does_only_with_the_token():
    progress = Progress()
    server = StatusServer("s3cret", lambda: "py-0", progress)
    try:
        code, body = get(server.port)
        assert code == 200
        assert body["role"] == "trainer" and body["identity"] == "py-0" and body["state"] == "STARTING"
        assert body["samples"] == 0 and body["tasksDone"] == 0 and body["task"] == -1 and body["loss"] is None
        progress.pass_, progress.task = 1, 7
        progress.batch(64, 0.5)
        progress.batch(64, 0.25)
        progress.tasks_done = 3
        code, body = get(server.port)
        assert (body["state"], body["pass"], body["task"], body["tasksDone"]) == ("TRAINING", 1, 7, 3)
        assert (body["batches"], body["samples"], body["loss"]) == (2, 128, 0.25)
        assert body["samplesPerSecond"] > 0
        assert get(server.port, token="wrong")[0] == 401
        assert get(server.port, token=None)[0] == 401
        assert get(server.port, path="/admin/shutdown")[0] == 404
    finally:
        server.close()


def test_status_needs_a_token():
    with pytest.raises(ValueError, match="admin token"):
        StatusServer("", lambda: "py-0", Progress())


def test_the_advertised_host_is_the_environment_s_else_the_route_to_the_master(monkeypatch):
    monkeypatch.delenv("PARAMSERVER_STATUS_HOST", raising=False)
    monkeypatch.delenv("PARAMSERVER_ADVERTISE_HOST", raising=False)
    assert advertised_host("127.0.0.1:9091") == "127.0.0.1"
    monkeypatch.setenv("PARAMSERVER_ADVERTISE_HOST", "10.1.2.3")
    assert advertised_host("127.0.0.1:9091") == "10.1.2.3"
    monkeypatch.setenv("PARAMSERVER_STATUS_HOST", "10.9.9.9")
    assert advertised_host("127.0.0.1:9091") == "10.9.9.9"


def test_a_task_is_shuffled_as_the_java_trainer_shuffles_it():
    pytest.importorskip("torch")
    from paramserver.torch.data import shuffled

    # java.util.Collections.shuffle(0..19, new java.util.Random(seed)), printed by Java 17
    assert shuffled(20, 42 ^ (7 * 31 + 0)) == [3, 7, 15, 18, 14, 6, 19, 9, 4, 10, 17, 5, 12, 16, 1, 11, 0, 13, 2, 8]
    assert shuffled(20, 42 ^ (123 * 31 + 2)) == [1, 19, 3, 2, 18, 6, 13, 16, 4, 7, 10, 0, 12, 14, 9, 17, 5, 8, 11, 15]
    assert shuffled(20, 12345678901) == [5, 7, 8, 6, 16, 17, 1, 15, 9, 4, 19, 18, 2, 10, 11, 12, 0, 13, 3, 14]
    assert shuffled(0, 1) == [] and shuffled(1, 1) == [0]
