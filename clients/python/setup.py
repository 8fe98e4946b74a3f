"""Builds the paramserver package (PEP 517, setuptools). Its gRPC stubs are generated here, at build
time, from the repository's .proto files (common-proto/src/main/proto; an sdist carries a copy in
proto/) by paramserver/gen.py: with grpcio-tools (the build requirement in pyproject.toml) or, in a
build without isolation that lacks it, the system's protoc (Debian's route). Never committed, never at
import.

The version is the project's (the root pom.xml's, less -SNAPSHOT; an sdist's PKG-INFO once cut), and
the lower bounds of protobuf and grpcio are the versions the generated stubs require."""

import importlib.util
import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
_spec = importlib.util.spec_from_file_location("_paramserver_gen", os.path.join(HERE, "paramserver", "gen.py"))
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)  # by path: paramserver/__init__ would need grpc, not installed yet


def project_version():
    """0.1.0 of the root pom's 0.1.0-SNAPSHOT (in a checkout), else the sdist's PKG-INFO version."""
    pom = os.path.join(ROOT, "pom.xml")
    if os.path.exists(pom):
        ns = {"m": "http://maven.apache.org/POM/4.0.0"}
        version = ET.parse(pom).getroot().find("m:version", ns)
        if version is None or not version.text:
            raise RuntimeError("%s has no <version>" % pom)
        return version.text.strip().replace("-SNAPSHOT", "")
    with open(os.path.join(HERE, "PKG-INFO")) as f:
        return re.search(r"^Version: (\S+)$", f.read(), re.M).group(1)


def runtime_bounds():
    """[protobuf, grpcio] requirements the stubs this build generates need: the gencode version they
    check at import (protobuf 5.26 and later write it), else protobuf 4.21 (Debian's protoc 3.21)."""
    out = tempfile.mkdtemp(prefix="paramserver-gen-")
    try:
        gen.generate(None, out)
        with open(os.path.join(out, "v1", "tensor_pb2.py")) as f:
            pb = re.search(r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,\s*(\d+),\s*(\d+),\s*(\d+)",
                           f.read())
        with open(os.path.join(out, "v1", "pserver_pb2_grpc.py")) as f:
            rpc = re.search(r"GRPC_GENERATED_VERSION = '([\d.]+)'", f.read())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    protobuf = ("protobuf>=%s.%s.%s,<%d" % (pb.group(1), pb.group(2), pb.group(3), int(pb.group(1)) + 1)
                if pb else "protobuf>=4.21,<8")
    grpcio = "grpcio>=%s,<2" % rpc.group(1) if rpc else "grpcio>=1.51,<2"
    return [protobuf, grpcio]


VERSION = project_version()


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "paramserver")
        gen.generate(os.environ.get("PARAMSERVER_PROTOS") or None, out)
        with open(os.path.join(out, "_version.py"), "w") as f:
            f.write('"""Written by the build (setup.py) from the project\'s version."""\n\n__version__ = "%s"\n'
                    % VERSION)


class SdistWithProtos(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        protos = os.environ.get("PARAMSERVER_PROTOS") or gen.default_protos()
        target = os.path.join(base_dir, "proto", "paramserver", "v1")
        os.makedirs(target, exist_ok=True)
        for f in gen.digest(protos)[0]:
            shutil.copy(f, target)


setup(
    version=VERSION,
    install_requires=runtime_bounds() + ["numpy>=1.24,<3", "googleapis-common-protos>=1.56,<2"],
    cmdclass={"build_py": BuildWithStubs, "sdist": SdistWithProtos},
)
