"""Typed errors: the google.rpc.ErrorInfo every paramserver refusal carries in the trailer
grpc-status-details-bin (a google.rpc.Status), decoded by hand (no google/rpc stubs needed), as one
exception class per paramserver.v1.ErrorReason."""

import grpc


class ParamServerError(Exception):
    """A paramserver error: .reason (ErrorReason name or None), .code (grpc.StatusCode or None),
    .metadata (the ErrorInfo's metadata, e.g. {"leader": "host:port"} on NotLeader; on WrongShard
    "owner", "row", "table", "pservers" and "index": the pserver that owns the first wrongly routed
    row, the row, its table, the N the pserver routes with and its own index)."""

    def __init__(self, message, reason=None, code=None, metadata=None):
        super().__init__(message)
        self.reason, self.code, self.metadata = reason, code, dict(metadata or {})


class CallOrderError(ParamServerError):
    """A client method called before the one it needs (the message says which)."""


_REASONS = ["NOT_INITIALIZED", "UNKNOWN_PARAMETER", "SHAPE_MISMATCH", "UNSUPPORTED_DTYPE",
            "NON_FINITE_GRADIENT", "INIT_CONFLICT", "NOT_LEADER", "DATASET_CONFLICT", "NO_DATASET",
            "DATASET_UNREADABLE", "UNKNOWN_TASK", "BAD_ARGUMENT", "SHUTTING_DOWN", "TOO_LARGE",
            "BAD_OPTIMIZER", "SYNC_ABORTED", "NOT_PRIMARY", "PUSH_WINDOW_EXCEEDED", "NOT_JOINED",
            "MODEL_MISMATCH", "TRAINER_ID_TAKEN", "NO_MODEL", "WRONG_SHARD", "MOVED"]
# one class per reason, named in CamelCase: NOT_LEADER -> NotLeader (NOT_INITIALIZED -> NotInitialized)
BY_REASON = {r: type("".join(w.capitalize() for w in r.split("_")), (ParamServerError,), {})
             for r in _REASONS}
globals().update({c.__name__: c for c in BY_REASON.values()})
__all__ = ["ParamServerError", "CallOrderError", "from_rpc_error", "error_info"] + [
    c.__name__ for c in BY_REASON.values()]


def _fields(data):
    """(field number, value) of a serialized protobuf message; length-delimited values as bytes."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        kind = key & 7
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


def _varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def error_info(status_details):
    """(reason, domain, metadata) of the first ErrorInfo in a serialized google.rpc.Status
    (Status.details = 3: Any{type_url = 1, value = 2}; ErrorInfo{reason = 1, domain = 2,
    metadata = 3: map entry {key = 1, value = 2}}), or None."""
    for number, detail in _fields(status_details):
        if number != 3:
            continue
        any_ = dict(_fields(detail))
        if not any_.get(1, b"").endswith(b"/google.rpc.ErrorInfo"):
            continue
        reason, domain, metadata = None, None, {}
        for n, v in _fields(any_.get(2, b"")):
            if n == 1:
                reason = v.decode("utf-8")
            elif n == 2:
                domain = v.decode("utf-8")
            elif n == 3:
                entry = dict(_fields(v))
                metadata[entry.get(1, b"").decode("utf-8")] = entry.get(2, b"").decode("utf-8")
        return reason, domain, metadata
    return None


def from_rpc_error(e, what=""):
    """The typed ParamServerError of a grpc.RpcError (ParamServerError when it has no known reason)."""
    code = e.code() if isinstance(e, grpc.Call) else None
    details = e.details() if isinstance(e, grpc.Call) else str(e)
    reason, metadata = None, {}
    for key, value in (e.trailing_metadata() or ()) if isinstance(e, grpc.Call) else ():
        if key == "grpc-status-details-bin":
            info = error_info(value)
            if info:
                reason, _, metadata = info
    cls = BY_REASON.get(reason, ParamServerError)
    prefix = (what + ": ") if what else ""
    name = code.name if code else "ERROR"
    msg = "%s%s%s: %s" % (prefix, name, "/" + reason if reason else "", details)
    err = cls(msg, reason, code, metadata)
    err.__cause__ = e
    return err
