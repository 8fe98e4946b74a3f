"""Builds the paramserver package; its gRPC stubs are generated here from the repository's
.proto files (common-proto/src/main/proto) by paramserver.gen, never committed."""
import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paramserver import gen  # noqa: E402  (imports nothing generated)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "paramserver")
        gen.generate(os.environ.get("PARAMSERVER_PROTOS", gen.SOURCE_PROTOS), out)


setup(cmdclass={"build_py": BuildWithStubs})
