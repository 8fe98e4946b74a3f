"""Typed errors. Every paramserver refusal carries a google.rpc.ErrorInfo in the gRPC trailer
grpc-status-details-bin (a serialized google.rpc.Status); from_rpc_error() raises the class of its
reason: one class per paramserver.v1.ErrorReason (errors.proto), written out below (a test checks
them against the enum). The Status is decoded with googleapis-common-protos' google.rpc messages
(a dependency of the pip package); where they are not installed (Debian has no package of them), a
minimal reader of the same wire format (Status.details, Any, ErrorInfo) takes their place.

This module needs neither grpc nor the generated stubs at import."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, Mapping, Optional, Tuple, Type

if TYPE_CHECKING:
    import grpc

__all__ = [
    "ParamServerError", "CallOrderError", "from_rpc_error", "error_info", "BY_REASON",
    "NotInitialized", "UnknownParameter", "ShapeMismatch", "UnsupportedDtype", "NonFiniteGradient",
    "InitConflict", "NotLeader", "DatasetConflict", "NoDataset", "DatasetUnreadable", "UnknownTask",
    "BadArgument", "ShuttingDown", "TooLarge", "BadOptimizer", "SyncAborted", "NotPrimary",
    "PushWindowExceeded", "NotJoined", "ModelMismatch", "TrainerIdTaken", "NoModel", "WrongShard", "Moved",
    "FollowerTooSlow", "VersionNotReached", "Overloaded",
]


class ParamServerError(Exception):
    """A paramserver error: .reason (the ErrorReason's name, or None), .code (grpc.StatusCode or
    None), .metadata (the ErrorInfo's metadata, e.g. {"leader": "host:port"} on NotLeader)."""

    reason_name: Optional[str] = None  # the ErrorReason a subclass stands for

    def __init__(self, message: str, reason: Optional[str] = None, code: Optional[grpc.StatusCode] = None,
                 metadata: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(message)
        self.reason: Optional[str] = reason if reason is not None else self.reason_name
        self.code: Optional[grpc.StatusCode] = code
        self.metadata: Dict[str, str] = dict(metadata or {})


class CallOrderError(ParamServerError):
    """A client method called before the one it needs (the message says which)."""


class NotInitialized(ParamServerError):
    """The pserver shard has not been initialised: call InitParameters and FinishInit first."""
    reason_name = "NOT_INITIALIZED"


class UnknownParameter(ParamServerError):
    """A parameter or block name the server does not know."""
    reason_name = "UNKNOWN_PARAMETER"


class ShapeMismatch(ParamServerError):
    """A tensor has the wrong number of elements or the wrong shape."""
    reason_name = "SHAPE_MISMATCH"


class UnsupportedDtype(ParamServerError):
    """An element type the server does not accept."""
    reason_name = "UNSUPPORTED_DTYPE"


class NonFiniteGradient(ParamServerError):
    """A gradient holds NaN or Inf (nothing of the push was applied)."""
    reason_name = "NON_FINITE_GRADIENT"


class InitConflict(ParamServerError):
    """InitParameters with a different definition than the one already in place."""
    reason_name = "INIT_CONFLICT"


class NotLeader(ParamServerError):
    """The master is not (or no longer) the leader; .metadata["leader"] names it when known."""
    reason_name = "NOT_LEADER"


class DatasetConflict(ParamServerError):
    """SetDataset with a different dataset than the one already set."""
    reason_name = "DATASET_CONFLICT"


class NoDataset(ParamServerError):
    """A call that needs the dataset before SetDataset was called."""
    reason_name = "NO_DATASET"


class DatasetUnreadable(ParamServerError):
    """A dataset glob matched no files, or a file could not be read."""
    reason_name = "DATASET_UNREADABLE"


class UnknownTask(ParamServerError):
    """An unknown task id."""
    reason_name = "UNKNOWN_TASK"


class BadArgument(ParamServerError):
    """A request argument is out of range or malformed."""
    reason_name = "BAD_ARGUMENT"


class ShuttingDown(ParamServerError):
    """The server is shutting down and takes no new work."""
    reason_name = "SHUTTING_DOWN"


class TooLarge(ParamServerError):
    """A message or tensor exceeds a configured size limit."""
    reason_name = "TOO_LARGE"


class BadOptimizer(ParamServerError):
    """An invalid optimizer configuration."""
    reason_name = "BAD_OPTIMIZER"


class SyncAborted(ParamServerError):
    """A synchronous step could not complete (for example a barrier timed out)."""
    reason_name = "SYNC_ABORTED"


class NotPrimary(ParamServerError):
    """Replication: the sender is not (or no longer) the primary of the shard."""
    reason_name = "NOT_PRIMARY"


class PushWindowExceeded(ParamServerError):
    """A windowed push's step is too far above its acknowledged_through."""
    reason_name = "PUSH_WINDOW_EXCEEDED"


class NotJoined(ParamServerError):
    """The call needs the trainer's membership: join() first (the client re-joins by itself)."""
    reason_name = "NOT_JOINED"


class ModelMismatch(ParamServerError):
    """The trainer's model (or mode) differs from the job's; the message names the first difference."""
    reason_name = "MODEL_MISMATCH"


class TrainerIdTaken(ParamServerError):
    """A live member of the job already holds the trainer id."""
    reason_name = "TRAINER_ID_TAKEN"


class NoModel(ParamServerError):
    """The job has no model yet (no trainer joined with one)."""
    reason_name = "NO_MODEL"


class WrongShard(ParamServerError):
    """Sparse rows sent to a pserver that does not own them (nothing applied). .metadata: "owner",
    "row", "table", "pservers" (the N the pserver routes with) and "index" (its own)."""
    reason_name = "WRONG_SHARD"


class Moved(ParamServerError):
    """Elastic placement: a slot or block moved (nothing applied). .metadata: "owner", "epoch"
    (the placement epoch that gives it), "index" and "slot" or "block". The client resends by itself."""
    reason_name = "MOVED"


class FollowerTooSlow(ParamServerError):
    """A follower of a shard's change stream fell too far behind and was cut off: follow again."""
    reason_name = "FOLLOWER_TOO_SLOW"


class VersionNotReached(ParamServerError):
    """Serving: min_version was not reached in time. .metadata: "shard", "wanted", "served"."""
    reason_name = "VERSION_NOT_REACHED"


class Overloaded(ParamServerError):
    """The server is at one of its limits (concurrent calls, queued bytes, queued work) and refused
    the call before doing anything (RESOURCE_EXHAUSTED). .metadata: "retry_after_ms" (the hint) and
    "limit". The client retries the same request after the hint by itself."""
    reason_name = "OVERLOADED"


BY_REASON: Dict[str, Type[ParamServerError]] = {
    c.reason_name: c for c in ParamServerError.__subclasses__() if c.reason_name is not None}

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
Info = Tuple[Optional[str], Optional[str], Dict[str, str]]


def error_info(status_details: bytes) -> Optional[Info]:
    """(reason, domain, metadata) of the first google.rpc.ErrorInfo in a serialized google.rpc.Status
    (the grpc-status-details-bin trailer), or None when it has none."""
    try:
        from google.rpc import error_details_pb2, status_pb2
    except ImportError:  # googleapis-common-protos is not installed (Debian's stack)
        return _error_info_wire(status_details)
    status = status_pb2.Status.FromString(status_details)
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.reason or None, info.domain or None, dict(info.metadata)
    return None


def _error_info_wire(data: bytes) -> Optional[Info]:
    """error_info() without the google.rpc messages: Status.details = 3: Any{type_url = 1, value = 2};
    ErrorInfo{reason = 1, domain = 2, metadata = 3: map entry {key = 1, value = 2}}."""
    for number, detail in _fields(data):
        if number != 3 or not isinstance(detail, bytes):
            continue
        any_ = dict(_fields(detail))
        type_url, value = any_.get(1, b""), any_.get(2, b"")
        if not isinstance(type_url, bytes) or not type_url.endswith(b"/google.rpc.ErrorInfo"):
            continue
        reason: Optional[str] = None
        domain: Optional[str] = None
        metadata: Dict[str, str] = {}
        for n, v in _fields(value if isinstance(value, bytes) else b""):
            if not isinstance(v, bytes):
                continue
            if n == 1:
                reason = v.decode("utf-8")
            elif n == 2:
                domain = v.decode("utf-8")
            elif n == 3:
                entry = dict(_fields(v))
                k, val = entry.get(1, b""), entry.get(2, b"")
                if isinstance(k, bytes) and isinstance(val, bytes):
                    metadata[k.decode("utf-8")] = val.decode("utf-8")
        return reason, domain, metadata
    return None


def _fields(data: bytes) -> Iterator[Tuple[int, "int | bytes"]]:
    """(field number, value) of a serialized protobuf message; length-delimited values as bytes."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        kind = key & 7
        value: "int | bytes"
        if kind == 0:
            value, i = _varint(data, i)
        elif kind == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif kind in (1, 5):
            n = 8 if kind == 1 else 4
            value, i = data[i:i + n], i + n
        else:
            raise ValueError("unsupported wire type %d" % kind)
        yield key >> 3, value


def _varint(data: bytes, i: int) -> Tuple[int, int]:
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def from_rpc_error(e: BaseException, what: str = "") -> ParamServerError:
    """The typed ParamServerError of a grpc.RpcError (ParamServerError when it has no known reason)."""
    import grpc

    call = e if isinstance(e, grpc.Call) else None
    code = call.code() if call is not None else None
    details = call.details() if call is not None else str(e)
    reason: Optional[str] = None
    metadata: Dict[str, str] = {}
    for key, value in (call.trailing_metadata() or ()) if call is not None else ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            info = error_info(value)
            if info:
                reason, _, metadata = info
    cls = BY_REASON.get(reason or "", ParamServerError)
    prefix = (what + ": ") if what else ""
    name = code.name if code else "ERROR"
    msg = "%s%s%s: %s" % (prefix, name, "/" + reason if reason else "", details)
    err = cls(msg, reason, code, metadata)
    err.__cause__ = e
    return err
