"""paramserver.lookup and paramserver.predict against an in-process Serving server: the request each
sends, the rows, probabilities and version they answer with, and the replica's refusals as typed
errors. The same call against a real
serving replica: integration-tests' PythonServingLookupTest (tests/e2e/serving_lookup.py)."""

from concurrent import futures

import grpc
import numpy as np
import pytest

import paramserver
from fakes import refuse
from paramserver import errors
from paramserver.serving_lookup import Features, Predictions, Rows, ServedVersion, ShardPosition, lookup, predict
from paramserver._stubs import serving_pb2 as sv, serving_pb2_grpc as sv_grpc


class Replica(sv_grpc.ServingServicer):
    """Rows of table "emb" (width 2): row id is [id, -id]; ids above 1000 are not held."""

    def __init__(self):
        self.requests = []

    def Lookup(self, request, context):
        self.requests.append(request)
        if request.table != "emb":
            refuse(context, grpc.StatusCode.NOT_FOUND, "sparse table '%s' is not served: the tables are [emb]"
                   % request.table, "UNKNOWN_PARAMETER")
        if request.min_version.shards and request.min_version.shards[0].sequence > 7:
            refuse(context, grpc.StatusCode.UNAVAILABLE, "shard 0 is at sequence 7", "VERSION_NOT_REACHED",
                   {"shard": "0", "wanted": str(request.min_version.shards[0].sequence), "served": "7"})
        values = np.array([[i if i <= 1000 else 0.5, -i if i <= 1000 else 0.5] for i in request.ids],
                          dtype="<f4").reshape(-1, 2)
        return sv.LookupResponse(
            version=sv.ServingVersion(number=12, replica="r1",
                                      shards=[sv.ShardPosition(index=0, epoch=5, sequence=7)]),
            width=2, values=values.tobytes(), defaulted=[k for k, i in enumerate(request.ids) if i > 1000])


    def Predict(self, request, context):
        """Two classes: p(1) = 1 / (1 + number of dense features + number of sparse ids)."""
        self.requests.append(request)
        if len(request.examples) > 3:
            refuse(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                   "a prediction takes at most 3 examples (paramserver.serving.max-examples), got %d: split it"
                   % len(request.examples), "TOO_LARGE")
        probabilities, predicted = [], []
        for e in request.examples:
            p1 = 1.0 / (1 + len(e.dense) + len(e.sparse_ids))
            probabilities += [1 - p1, p1]
            predicted.append(1 if p1 > 0.5 else 0)
        return sv.PredictResponse(
            version=sv.ServingVersion(number=13, replica="r1",
                                      shards=[sv.ShardPosition(index=0, epoch=5, sequence=8)]),
            classes=2, probabilities=probabilities, predicted=predicted)


@pytest.fixture
def replica():
    fake = Replica()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    sv_grpc.add_ServingServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield fake, "127.0.0.1:%d" % port
    server.stop(None)


def test_lookup_answers_rows_in_the_requests_order_with_the_version_and_the_defaulted_ids(replica):
    fake, address = replica
    rows = paramserver.lookup(address, "emb", [3, 5000, 3], width=2, min_version={0: 6}, wait_ms=250)
    assert isinstance(rows, Rows)
    assert rows.values.dtype == np.float32 and rows.values.shape == (3, 2)
    assert rows.values.tolist() == [[3, -3], [0.5, 0.5], [3, -3]]
    assert rows.defaulted == (1,)
    assert rows.version == ServedVersion(12, "r1", (ShardPosition(0, 5, 7),))
    sent = fake.requests[-1]
    assert (sent.table, list(sent.ids), sent.width) == ("emb", [3, 5000, 3], 2)
    assert [(p.index, p.sequence) for p in sent.min_version.shards] == [(0, 6)]
    assert sent.min_version.wait_ms == 250


def test_lookup_on_an_open_channel_leaves_it_open(replica):
    fake, address = replica
    with grpc.insecure_channel(address) as channel:
        assert lookup(channel, "emb", [1]).values.tolist() == [[1, -1]]
        assert lookup(channel, "emb", []).values.shape == (0, 2)
    assert not fake.requests[0].HasField("min_version")


def test_refusals_are_typed_errors_naming_the_problem(replica):
    _, address = replica
    with pytest.raises(errors.UnknownParameter, match="the tables are \\[emb\\]"):
        lookup(address, "nope", [1])
    with pytest.raises(errors.VersionNotReached) as e:
        lookup(address, "emb", [1], min_version={0: 9})
    assert e.value.metadata == {"shard": "0", "wanted": "9", "served": "7"}
    with pytest.raises(ValueError, match="width must be 0"):
        lookup(address, "emb", [1], width=-1)


def test_predict_answers_each_examples_probabilities_and_class_on_one_version(replica):
    fake, address = replica
    p = paramserver.predict(address, [Features(dense=[0.5, 2.0], sparse_ids=[3, 4], sparse_values=[1.5, 0.25]),
                                      Features()], min_version={0: 8}, wait_ms=100)
    assert isinstance(p, Predictions)
    assert p.classes == 2 and p.probabilities.dtype == np.float32 and p.probabilities.shape == (2, 2)
    assert p.probabilities.tolist() == [[0.800000011920929, 0.20000000298023224], [0.0, 1.0]]
    assert p.predicted.tolist() == [0, 1] and p.predicted.dtype == np.int32
    assert p.version == ServedVersion(13, "r1", (ShardPosition(0, 5, 8),))
    sent = fake.requests[-1]
    assert [list(e.dense) for e in sent.examples] == [[0.5, 2.0], []]
    assert [list(e.sparse_ids) for e in sent.examples] == [[3, 4], []]
    assert list(sent.examples[0].sparse_values) == [1.5, 0.25]
    assert [(s.index, s.sequence) for s in sent.min_version.shards] == [(0, 8)]
    assert paramserver.predict(address, []).probabilities.shape == (0, 2)


def test_predict_refusals_are_typed_errors_and_bad_examples_are_caught_before_sending(replica):
    fake, address = replica
    with pytest.raises(errors.TooLarge, match="at most 3 examples"):
        predict(address, [Features()] * 4)
    sent = len(fake.requests)
    with pytest.raises(TypeError, match="examples\\[0\\] must be a paramserver.Features"):
        predict(address, [{"dense": [1.0]}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="2 sparse_values for 1 sparse_ids"):
        predict(address, [Features(sparse_ids=[1], sparse_values=[1.0, 2.0])])
    with pytest.raises(ValueError, match="wait_ms must be 0"):
        predict(address, [Features()], wait_ms=-1)
    assert len(fake.requests) == sent
