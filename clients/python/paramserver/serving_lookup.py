"""Lookups and predictions on a serving replica (serving-service, paramserver.v1.Serving): rows of a
sparse table, and the model's class probabilities, as the model trains, on one version that the
answer names.

    from paramserver import Features, lookup, predict
    rows = lookup("127.0.0.1:9094", "emb", [3, 17, 3], width=8)
    rows.values            # float32 array [3, 8], row i the row of ids[i]
    rows.defaulted         # positions whose id the table holds no row for (the table's initial row)
    rows.version.shards    # where each shard was in the version read
    p = predict("127.0.0.1:9094", [Features(dense=[0.5, 1.0], sparse_ids=[3, 17])])
    p.probabilities        # float32 array [1, classes]
    p.predicted            # int32 array [1]: the most probable class of each example

Read your training's writes: a push acknowledged with step S by shard k is seen by
lookup(..., min_version={k: S}). Errors are the typed ParamServerErrors (UnknownParameter,
ShapeMismatch, TooLarge, NotInitialized, VersionNotReached, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, Union

import grpc
import numpy as np
import numpy.typing as npt

from . import errors
from ._stubs import example_pb2 as ex, serving_pb2 as sv, serving_pb2_grpc as sv_grpc
from .client import OPTIONS, Tls

__all__ = ["lookup", "predict", "Features", "Predictions", "Rows", "ServedVersion", "ShardPosition"]


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


@dataclass(frozen=True)
class Features:
    """One example to predict, with raw features (the model's standardization, if any, is applied by
    the replica): `dense` as many values as the model has dense features; `sparse_ids` the sparse
    feature ids; `sparse_values` their values, parallel to `sparse_ids` (empty: every id has value 1)."""

    dense: Sequence[float] = ()
    sparse_ids: Sequence[int] = ()
    sparse_values: Sequence[float] = ()


@dataclass(frozen=True)
class Predictions:
    """A prediction's answer: `probabilities` float32 [len(examples), classes], example i in row i;
    `predicted` int32 [len(examples)], the most probable class of each (the first of equal ones)."""

    version: ServedVersion
    classes: int
    probabilities: npt.NDArray[np.float32]
    predicted: npt.NDArray[np.int32]


def _require_min_version(call: str, into: sv.MinVersion, min_version: Optional[Mapping[int, int]],
                         wait_ms: int) -> None:
    if wait_ms < 0:
        raise ValueError("%s: wait_ms must be 0 (the replica's default) or more, got %d" % (call, wait_ms))
    if not min_version:
        return
    into.wait_ms = wait_ms
    for index, sequence in sorted(min_version.items()):
        if index < 0 or sequence < 0:
            raise ValueError("%s: min_version needs shard indexes and sequences of 0 or more, got "
                             "{%d: %d}" % (call, index, sequence))
        into.shards.add(index=index, sequence=sequence)


def _ask(target: Union[str, grpc.Channel], tls: Optional[Tls], what: str,
         call: Callable[[sv_grpc.ServingStub], Any]) -> Any:
    """Runs `call` on a stub of `target` (an open channel is reused, an address opened and closed),
    raising the replica's refusal as a typed ParamServerError about `what`."""
    channel = target if isinstance(target, grpc.Channel) else _open(target, tls)
    try:
        return call(sv_grpc.ServingStub(channel))
    except grpc.RpcError as e:
        raise errors.from_rpc_error(e, what) from None
    finally:
        if channel is not target:
            channel.close()


def predict(target: Union[str, grpc.Channel], examples: Sequence[Features], *,
            min_version: Optional[Mapping[int, int]] = None, wait_ms: int = 0, timeout: float = 10.0,
            tls: Optional[Tls] = None) -> Predictions:
    """The model's class probabilities for `examples` from the serving replica at `target` ("host:port"
    of its gRPC port, or an open channel, reused): the numbers `psctl predict` gives for a model file
    holding the same parameters, all computed on one version.

    min_version and wait_ms as for lookup. Errors: TooLarge (more than the replica's
    paramserver.serving.max-examples), BadArgument (an example with another number of dense features
    than the model's), NoModel (the job has no model description), VersionNotReached, NotInitialized."""
    request = sv.PredictRequest()
    _require_min_version("predict", request.min_version, min_version, wait_ms)
    for i, e in enumerate(examples):
        if not isinstance(e, Features):
            raise TypeError("predict: examples[%d] must be a paramserver.Features, got %s" % (i, type(e).__name__))
        if e.sparse_values and len(e.sparse_values) != len(e.sparse_ids):
            raise ValueError("predict: examples[%d] has %d sparse_values for %d sparse_ids: give one per id, "
                             "or none (every id 1)" % (i, len(e.sparse_values), len(e.sparse_ids)))
        request.examples.append(ex.Example(dense=[float(v) for v in e.dense],
                                           sparse_ids=[int(v) for v in e.sparse_ids],
                                           sparse_values=[float(v) for v in e.sparse_values]))
    answer: sv.PredictResponse = _ask(target, tls, "prediction of %d examples" % len(request.examples),
                                      lambda stub: stub.Predict(request, timeout=timeout))
    n, k = len(request.examples), answer.classes
    probabilities = np.asarray(answer.probabilities, dtype=np.float32).reshape(n, k)
    return Predictions(ServedVersion.of(answer.version), k, probabilities,
                       np.asarray(answer.predicted, dtype=np.int32))


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
    request = sv.LookupRequest(table=table, ids=[int(i) for i in ids], width=width)
    _require_min_version("lookup", request.min_version, min_version, wait_ms)
    answer: sv.LookupResponse = _ask(target, tls, "lookup of %d ids of '%s'" % (len(request.ids), table),
                                     lambda stub: stub.Lookup(request, timeout=timeout))
    values = np.frombuffer(answer.values, dtype="<f4").astype(np.float32, copy=False)
    rows = values.reshape(len(request.ids), answer.width) if answer.width else values.reshape(len(request.ids), 0)
    return Rows(ServedVersion.of(answer.version), answer.width, rows, tuple(answer.defaulted))


def _open(address: str, tls: Optional[Tls]) -> grpc.Channel:
    if tls is None:
        return grpc.insecure_channel(address, options=OPTIONS)
    return grpc.secure_channel(address, tls.credentials(), options=OPTIONS + tls.options())
