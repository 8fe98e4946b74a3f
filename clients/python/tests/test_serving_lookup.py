"""paramserver.lookup against an in-process Serving server: the request it sends, the rows and the
version it answers with, and the replica's refusals as typed errors. The same call against a real
serving replica: integration-tests' PythonServingLookupTest (tests/e2e/serving_lookup.py)."""

from concurrent import futures

import grpc
import numpy as np
import pytest

import paramserver
from fakes import refuse
from paramserver import errors
from paramserver.serving_lookup import Rows, ServedVersion, ShardPosition, lookup
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
