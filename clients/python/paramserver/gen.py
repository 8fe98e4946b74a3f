"""Generates the gRPC stubs (paramserver/v1/*_pb2.py, *_pb2.pyi, *_pb2_grpc.py) from common-proto's
.proto files. A build step, never run on import: the wheel's build (setup.py) runs it, and so does a
source checkout used without installing (python3 -m paramserver.gen). Never committed (gitignored).

    python3 -m paramserver.gen [--protos DIR] [--out DIR] [--if-stale]

A source checkout's stubs go to the package directory (paramserver/v1/), or, when the environment
variable PARAMSERVER_STUBS names a directory, to $PARAMSERVER_STUBS/v1/, where the package then
imports them from (paramserver/__init__.py): a build directory outside the source tree, so that test
runs side by side neither write nor read the tree's stubs.

The compiler is grpcio-tools' (grpc_tools.protoc, with its bundled well-known types) when that is
installed (the pip route: it is the build requirement), else the system's protoc with
grpc_python_plugin and the well-known types of libprotobuf-dev (the Debian route: apt-get install
protobuf-compiler protobuf-compiler-grpc libprotobuf-dev).

This module imports nothing of the package and nothing outside the standard library (setup.py loads
it by path, before grpc or protobuf may be installed)."""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from typing import List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
# the repository's protos; an sdist carries a copy in proto/ beside setup.py
SOURCE_PROTOS = os.path.normpath(os.path.join(CLIENT, "..", "..", "common-proto", "src", "main", "proto"))
SDIST_PROTOS = os.path.join(CLIENT, "proto")
WELL_KNOWN = ["/usr/include", "/usr/local/include"]  # libprotobuf-dev: google/protobuf/struct.proto
PLUGIN = os.environ.get("GRPC_PYTHON_PLUGIN", "/usr/bin/grpc_python_plugin")
STAMP = ".protos.sha256"
STUBS_VARIABLE = "PARAMSERVER_STUBS"


class GenerationError(RuntimeError):
    """The stubs could not be generated (the message says what to install)."""


def default_protos() -> str:
    """The repository's common-proto sources, else the copy an sdist carries."""
    return SOURCE_PROTOS if os.path.isdir(SOURCE_PROTOS) else SDIST_PROTOS


def stubs_dir() -> str:
    """Where a source checkout's stubs are: $PARAMSERVER_STUBS when set, else the package directory."""
    return os.environ.get(STUBS_VARIABLE) or HERE


def digest(protos: str) -> Tuple[List[str], str]:
    """The .proto files of paramserver/v1 under `protos`, and a digest of their names and contents."""
    d, h = os.path.join(protos, "paramserver", "v1"), hashlib.sha256()
    if not os.path.isdir(d):
        raise GenerationError("no .proto files in %s (common-proto/src/main/proto of the repository)" % d)
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".proto"))
    for f in files:
        with open(f, "rb") as fh:
            h.update(os.path.basename(f).encode() + b"\0" + fh.read())
    return files, h.hexdigest()


def compiler() -> Tuple[str, List[str]]:
    """("grpcio-tools" or "protoc", the command's start with its include path of well-known types)."""
    if importlib.util.find_spec("grpc_tools") is not None:
        import grpc_tools  # type: ignore[import-untyped,import-not-found,unused-ignore]

        bundled = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        return "grpcio-tools", [sys.executable, "-m", "grpc_tools.protoc", "-I", bundled]
    inc = [d for d in WELL_KNOWN if os.path.exists(os.path.join(d, "google", "protobuf", "struct.proto"))]
    protoc = shutil.which("protoc")
    if not inc or protoc is None or not os.access(PLUGIN, os.X_OK):
        raise GenerationError(
            "paramserver.gen needs grpcio-tools (pip install grpcio-tools) or protoc with %s and "
            "google/protobuf/struct.proto in %s (apt-get install protobuf-compiler "
            "protobuf-compiler-grpc libprotobuf-dev)" % (PLUGIN, " or ".join(WELL_KNOWN)))
    return "protoc", [protoc, "--plugin=protoc-gen-grpc_python=" + PLUGIN, "-I", inc[0]]


def generate(protos: Optional[str] = None, out: Optional[str] = None) -> str:
    """Writes out/v1/ (stubs, type stubs, __init__.py, stamp) from protos, swapped in as a whole;
    out by default stubs_dir()."""
    protos, out = protos or default_protos(), out or stubs_dir()
    os.makedirs(out, exist_ok=True)
    files, stamp = digest(protos)
    kind, command = compiler()
    tmp = os.path.join(out, ".gen-%d" % os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        outputs = ["--python_out=" + tmp, "--grpc_python_out=" + tmp, "--pyi_out=" + tmp]
        run = subprocess.run(command + outputs + ["-I", protos] + files, capture_output=True, text=True)
        if run.returncode != 0:
            raise GenerationError("paramserver.gen: %s failed: %s" % (kind, run.stderr.strip()))
        gen = os.path.join(tmp, "paramserver", "v1")
        with open(os.path.join(gen, "__init__.py"), "w") as f:
            f.write('"""Generated by paramserver.gen (%s) from common-proto; do not edit."""\n' % kind)
        with open(os.path.join(gen, STAMP), "w") as f:
            f.write(stamp)
        target = os.path.join(out, "v1")
        if os.path.exists(target):
            os.rename(target, os.path.join(tmp, "old"))
        os.rename(gen, target)
        # this process may have looked for paramserver.v1 in `out` before (a directory missing then)
        sys.path_importer_cache.pop(out, None)
        importlib.invalidate_caches()
    except OSError as e:
        raise GenerationError("paramserver.gen: cannot write the stubs to %s: %s" % (out, e)) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def ensure(protos: Optional[str] = None, out: Optional[str] = None) -> bool:
    """(Re)generates the stubs (in out, by default stubs_dir()) when missing or older than the
    protos, under a file lock so that processes started together generate once; True when it
    generated them."""
    protos, out = protos or default_protos(), out or stubs_dir()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".gen.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(os.path.join(out, "v1", STAMP)) as f:
                if f.read() == digest(protos)[1]:
                    return False
        except OSError:
            pass
        generate(protos, out)
        return True


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="generate paramserver's gRPC stubs")
    ap.add_argument("--protos", default=None, help="common-proto/src/main/proto (default: the repository's)")
    ap.add_argument("--out", default=None,
                    help="the directory to write v1/ in (default: $%s, else the paramserver package directory)"
                    % STUBS_VARIABLE)
    ap.add_argument("--if-stale", action="store_true", help="only when missing or older than the protos")
    a = ap.parse_args(argv)
    out = a.out or stubs_dir()
    try:
        if a.if_stale:
            print("generated" if ensure(a.protos, out) else "up to date", os.path.join(out, "v1"))
        else:
            print("generated", generate(a.protos, out))
    except GenerationError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
