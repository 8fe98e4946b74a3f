"""paramserver: train against a paramserver job from Python, with no etcd client.

    from paramserver import Client             # the protocol (numpy arrays)
    from paramserver.torch import Trainer      # PyTorch modules (import paramserver.torch)

Importing this package does not need the generated stubs (python3 -m paramserver.gen makes them);
paramserver.client does, and generates them from the source tree when they are missing or stale."""

from .errors import *  # noqa: F401,F403  (the typed errors: ParamServerError, NotLeader, ...)

__all__ = ["Client", "ASYNC", "SYNC", "BOUNDED_STALENESS"]


def __getattr__(name):
    if name in __all__:
        from . import client
        return getattr(client, name)
    raise AttributeError("module 'paramserver' has no attribute %r" % name)
