"""The generated gRPC stubs (paramserver.v1), imported with an ImportError that says what to do when
they are missing (a source checkout: python3 -m paramserver.gen) or do not match the installed
protobuf or grpcio (the message names both)."""

from __future__ import annotations

try:
    import grpc  # noqa: F401
    import google.protobuf
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("paramserver needs grpcio and protobuf: pip install paramserver (or, on Debian, "
                      "apt-get install python3-grpcio python3-protobuf): %s" % e) from e

try:
    from .v1 import coordination_pb2 as co, coordination_pb2_grpc as co_grpc
    from .v1 import example_pb2, optimizer_pb2, placement_pb2, tensor_pb2
    from .v1 import master_pb2 as ma, master_pb2_grpc as ma_grpc
    from .v1 import pserver_pb2 as pb, pserver_pb2_grpc as pb_grpc
    from .v1 import serving_pb2, serving_pb2_grpc
except ImportError as e:
    raise ImportError(
        "paramserver's gRPC stubs (paramserver.v1) are missing: they are generated when the package is "
        "built (pip install ./clients/python, or python -m build); in a source checkout used without "
        "installing, run `python3 -m paramserver.gen` in clients/python once (%s)" % e) from e
except Exception as e:  # protobuf's VersionError, grpc's RuntimeError: stubs newer than the runtime
    raise ImportError(
        "paramserver's gRPC stubs do not match the installed protobuf %s / grpcio %s (regenerate them "
        "with `python3 -m paramserver.gen`, or install matching versions): %s"
        % (google.protobuf.__version__, getattr(grpc, "__version__", "?"), e)) from e

__all__ = ["co", "co_grpc", "example_pb2", "ma", "ma_grpc", "optimizer_pb2", "pb", "pb_grpc",
           "placement_pb2", "serving_pb2", "serving_pb2_grpc", "tensor_pb2"]
