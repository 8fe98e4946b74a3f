"""Lookups on a serving replica (serving-service, paramserver.v1.Serving): rows of a sparse table as
the model trains, on one version that the answer names.

    from paramserver import lookup
    rows = lookup("127.0.0.1:9094", "emb", [3, 17, 3], width=8)
    rows.values            # float32 array [3, 8], row i the row of ids[i]
    rows.defaulted         # positions whose id the table holds no row for (the table's initial row)
    rows.version.shards    # where each shard was in the version read

Read your training's writes: a push acknowledged with step S by shard k is seen by
lookup(..., min_version={k: S}). Errors are the typed ParamServerErrors (UnknownParameter,
ShapeMismatch, TooLarge, NotInitialized, VersionNotReached, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple, Union

import grpc
import numpy as np
import numpy.typing as npt

from . import errors
from ._stubs import serving_pb2 as sv, serving_pb2_grpc as sv_grpc
from .client import OPTIONS, Tls

__all__ = ["lookup", "Rows", "ServedVersion", "ShardPosition"]


@dataclass(frozen=True)
class ShardPosition:
    """One shard's place in a version: its index, the feed epoch of the primary the records came
    from and its sequence (the step its primary answered for the last push the version holds)."""

    index: int
    epoch: int
    sequence: int


@dataclass(frozen=True)
class ServedVersion:
    """The version an answer was computed on. `number` grows by one per version the replica
    publishes and is comparable only between answers of the same `replica`."""

    number: int
    replica: str
    shards: Tuple[ShardPosition, ...]

    @staticmethod
    def of(v: sv.ServingVersion) -> ServedVersion:
        return ServedVersion(v.number, v.replica,
                             tuple(ShardPosition(s.index, s.epoch, s.sequence) for s in v.shards))


@dataclass(frozen=True)
class Rows:
    """A lookup's answer: `values` float32 [len(ids), width], in the request's order; `defaulted` the
    positions whose id the table holds no row for (never pushed, or evicted), read as the table's
    initial row."""

    version: ServedVersion
    width: int
    values: npt.NDArray[np.float32]
    defaulted: Tuple[int, ...]


def lookup(target: Union[str, grpc.Channel], table: str, ids: Sequence[int], *, width: int = 0,
           min_version: Optional[Mapping[int, int]] = None, wait_ms: int = 0, timeout: float = 10.0,
           tls: Optional[Tls] = None) -> Rows:
    """Rows `ids` of sparse table `table` from the serving replica at `target` ("host:port" of its
    gRPC port, 9094 by default; or an open channel, reused).

    width: the row width expected (0: not checked; another than the table's: ShapeMismatch).
    min_version: {shard index: sequence}: answer on a version where every listed shard is at least at
    its sequence, waiting up to wait_ms for it (0: the replica's paramserver.serving.min-version-wait);
    VersionNotReached when it is not reached in time. tls: for a string target, TLS as Client's."""
    if width < 0:
        raise ValueError("lookup: width must be 0 (not checked) or more, got %d" % width)
    if wait_ms < 0:
        raise ValueError("lookup: wait_ms must be 0 (the replica's default) or more, got %d" % wait_ms)
    request = sv.LookupRequest(table=table, ids=[int(i) for i in ids], width=width)
    if min_version:
        request.min_version.wait_ms = wait_ms
        for index, sequence in sorted(min_version.items()):
            if index < 0 or sequence < 0:
                raise ValueError("lookup: min_version needs shard indexes and sequences of 0 or more, got "
                                 "{%d: %d}" % (index, sequence))
            request.min_version.shards.add(index=index, sequence=sequence)
    channel = target if isinstance(target, grpc.Channel) else _open(target, tls)
    try:
        answer: sv.LookupResponse = sv_grpc.ServingStub(channel).Lookup(request, timeout=timeout)
    except grpc.RpcError as e:
        raise errors.from_rpc_error(e, "lookup of %d ids of '%s'" % (len(request.ids), table)) from None
    finally:
        if channel is not target:
            channel.close()
    values = np.frombuffer(answer.values, dtype="<f4").astype(np.float32, copy=False)
    rows = values.reshape(len(request.ids), answer.width) if answer.width else values.reshape(len(request.ids), 0)
    return Rows(ServedVersion.of(answer.version), answer.width, rows, tuple(answer.defaulted))


def _open(address: str, tls: Optional[Tls]) -> grpc.Channel:
    if tls is None:
        return grpc.insecure_channel(address, options=OPTIONS)
    return grpc.secure_channel(address, tls.credentials(), options=OPTIONS + tls.options())
