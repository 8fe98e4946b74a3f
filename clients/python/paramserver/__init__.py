"""paramserver: train PyTorch modules against a paramserver job, with no etcd client.

    from paramserver import Client, optimizer  # the protocol (numpy arrays)
    from paramserver.torch import Trainer      # PyTorch modules (import paramserver.torch)

Importing this package needs neither grpc nor the generated stubs (the errors and the version are
here); paramserver.client needs both (they are generated when the package is built).

In a source checkout, $PARAMSERVER_STUBS names the directory whose v1/ holds the stubs when they are
generated outside the tree (python3 -m paramserver.gen writes them there too): it is searched first."""

from __future__ import annotations

import os as _os
from typing import Any

if _os.environ.get("PARAMSERVER_STUBS"):  # paramserver.v1 from there, not from this directory
    __path__.insert(0, _os.environ["PARAMSERVER_STUBS"])

from .errors import *  # noqa: F401,F403  (the typed errors: ParamServerError, NotLeader, ...)
from .errors import __all__ as _errors


def _version() -> str:
    import importlib
    try:
        built: str = importlib.import_module("._version", __name__).__version__  # written by the build
        return built
    except ImportError:  # a source checkout: the root pom's version, as the build derives it
        import os
        import re
        pom = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "pom.xml")
        try:
            with open(pom) as f:
                m = re.search(r"</parent>.*?<version>([^<]+)</version>", f.read(), re.S)
            return m.group(1).replace("-SNAPSHOT", "") if m else "0+unknown"
        except OSError:
            return "0+unknown"


__version__ = _version()
_LAZY = ("Client", "Tls", "PendingPush", "optimizer", "dense_spec", "ASYNC", "SYNC", "BOUNDED_STALENESS")
_SERVING = ("lookup", "predict", "Features")  # paramserver.serving_lookup: reads of a serving replica
__all__ = ["__version__", *_LAZY, *_SERVING, *_errors]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import client
        return getattr(client, name)
    if name in _SERVING:
        from . import serving_lookup
        return getattr(serving_lookup, name)
    raise AttributeError("module 'paramserver' has no attribute %r" % name)
