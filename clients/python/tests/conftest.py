"""The tests run against the package in this source tree (its stubs generated once, as a build step:
python3 -m paramserver.gen, here or in $PARAMSERVER_STUBS), or, with PARAMSERVER_TEST_INSTALLED=1,
against the paramserver installed in the interpreter (a wheel built from this tree: the pip route)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
INSTALLED = os.environ.get("PARAMSERVER_TEST_INSTALLED") == "1"
if INSTALLED:
    while CLIENT in sys.path:  # python -m pytest from clients/python puts the source tree first
        sys.path.remove(CLIENT)
    sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != CLIENT]
else:
    sys.path.insert(0, CLIENT)
    from paramserver import gen  # noqa: E402

    gen.ensure()
