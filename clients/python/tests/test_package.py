"""The package as a user gets it: its version, its error classes against the proto enum, the
google.rpc.Status decoding, a clear ImportError without stubs, the pending-push handle, TLS, the
types (mypy --strict) and, where the build tools are installed, python -m build."""

import concurrent.futures
import contextlib
import dataclasses
import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import zipfile

import grpc
import numpy as np
import pytest

import paramserver
from conftest import CLIENT, REPO
from fakes import Cluster, Master
from paramserver import errors
from paramserver.client import Client, PendingPush, Tls, co_grpc, dense_spec, ma_grpc
from paramserver.v1 import errors_pb2

PACKAGE = os.path.dirname(os.path.abspath(paramserver.__file__))
have = lambda module: __import__("importlib.util").util.find_spec(module) is not None  # noqa: E731


def pom_version():
    with open(os.path.join(REPO, "pom.xml")) as f:
        return re.search(r"</parent>.*?<version>([^<]+)</version>", f.read(), re.S).group(1)


def test_version_is_the_projects():
    assert pom_version().startswith(paramserver.__version__)
    assert re.fullmatch(r"\d+\.\d+\.\d+", paramserver.__version__)


def test_an_error_class_for_every_reason_of_the_proto_enum():
    reasons = [r for r in errors_pb2.ErrorReason.keys() if r != "ERROR_REASON_UNSPECIFIED"]
    assert sorted(errors.BY_REASON) == sorted(reasons)
    for reason in reasons:
        cls = errors.BY_REASON[reason]
        assert cls.__name__ == "".join(w.capitalize() for w in reason.split("_"))
        assert getattr(paramserver, cls.__name__) is cls and issubclass(cls, paramserver.ParamServerError)
        assert cls("x").reason == reason and cls.__doc__


def test_status_decoded_with_the_google_rpc_protos_as_by_the_wire_reader():
    rpc = pytest.importorskip("google.rpc.status_pb2", reason="googleapis-common-protos is not installed")
    from google.rpc import error_details_pb2

    status = rpc.Status(code=9, message="not the leader")
    status.details.add().Pack(error_details_pb2.RetryInfo())  # another detail first
    status.details.add().Pack(error_details_pb2.ErrorInfo(
        reason="NOT_LEADER", domain="paramserver.dev", metadata={"leader": "h:1", "epoch": "7"}))
    data = status.SerializeToString()
    want = ("NOT_LEADER", "paramserver.dev", {"leader": "h:1", "epoch": "7"})
    assert errors.error_info(data) == want
    assert errors._error_info_wire(data) == want
    assert errors.error_info(rpc.Status(code=2).SerializeToString()) is None


def test_without_stubs_importing_the_client_raises_an_import_error_that_says_what_to_do(tmp_path):
    copy = tmp_path / "paramserver"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("v1", "__pycache__", ".gen*"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("PARAMSERVER_STUBS", None)  # stubs generated outside the package
    ok = subprocess.run([sys.executable, "-c", "import paramserver; print(paramserver.__version__)"],
                        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr  # the package itself imports
    r = subprocess.run([sys.executable, "-c", "import paramserver.client"], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "SystemExit" not in r.stderr
    assert "ImportError: paramserver's gRPC stubs (paramserver.v1) are missing" in r.stderr
    assert "python3 -m paramserver.gen" in r.stderr and "pip install" in r.stderr
    assert not (copy / "v1").exists()  # and nothing was generated on import


def test_stubs_generated_in_the_directory_paramserver_stubs_names_are_imported_from_there(tmp_path):
    # test runs side by side keep the stubs out of the source tree: a build directory of their own
    package, stubs = tmp_path / "src", tmp_path / "build" / "stubs"
    shutil.copytree(PACKAGE, package / "paramserver", ignore=shutil.ignore_patterns("v1", "__pycache__", ".gen*"))
    env = dict(os.environ, PYTHONPATH=str(package), PARAMSERVER_STUBS=str(stubs))
    gen = [sys.executable, "-m", "paramserver.gen", "--if-stale", "--protos",
           os.path.join(REPO, "common-proto", "src", "main", "proto")]
    runs = [subprocess.run(gen, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert runs[0].stdout.startswith("generated ") and runs[1].stdout.startswith("up to date ")
    r = subprocess.run([sys.executable, "-c", "import paramserver.client, paramserver.v1 as v; print(v.__file__)"],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(stubs / "v1" / "__init__.py")
    assert not (package / "paramserver" / "v1").exists()


def test_importing_the_package_loads_neither_grpc_numpy_the_stubs_nor_the_serving_calls():
    # a trainer process imports paramserver first: what it does not use must not slow its start
    code = ("import sys, paramserver; heavy = ('grpc', 'numpy', 'torch', 'paramserver.v1', 'paramserver._stubs', "
            "'paramserver.client', 'paramserver.serving_lookup'); print([m for m in heavy if m in sys.modules]); "
            "paramserver.predict; print('paramserver.serving_lookup' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(PACKAGE), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[]", "True"]  # loaded on first use


@pytest.fixture
def cluster():
    c = Cluster(n=2)
    yield c
    c.close()


def test_push_without_waiting_returns_a_frozen_pending_push_with_a_future(cluster):
    c = Client(cluster.address, "t1", timeout_s=2, failover_s=3, retry_s=5)
    c.join([dense_spec("w", [3, 4], 4)])
    values = {"w": np.arange(12, dtype=np.float32)}
    c.init_parameters(values)
    into = {"w": np.zeros(12, np.float32)}
    pending = c.push({"w": np.ones(12, np.float32)}, into=into, wait=False)
    assert isinstance(pending, PendingPush) and isinstance(pending.answers, concurrent.futures.Future)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pending.step = 5
    assert c.complete(pending) == 1 == pending.step and pending.done()
    np.testing.assert_array_equal(into["w"], np.arange(12, dtype=np.float32) - 1)  # the fake: SGD, lr 1
    c.close()


def openssl(tmp, *args):
    subprocess.run(["openssl", *args], cwd=str(tmp), check=True, capture_output=True, timeout=60)


@pytest.fixture
def certificates(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    openssl(tmp_path, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "1", "-subj", "/CN=paramserver test CA")
    for name, cn in (("server", "pserver.paramserver.test"), ("client", "trainer")):
        openssl(tmp_path, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
                "-subj", "/CN=" + cn)
        (tmp_path / (name + ".ext")).write_text("subjectAltName=DNS:%s\n" % cn)
        openssl(tmp_path, "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".pem", "-days", "1", "-extfile", name + ".ext")
    return tmp_path


def test_tls_with_a_client_certificate_reaches_a_server_that_requires_one(certificates):
    read = lambda name: (certificates / name).read_bytes()  # noqa: E731
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
    master = Master([])
    ma_grpc.add_MasterServicer_to_server(master, server)
    co_grpc.add_CoordinationServicer_to_server(master, server)
    creds = grpc.ssl_server_credentials([(read("server.key"), read("server.pem"))], read("ca.pem"), True)
    address = "127.0.0.1:%d" % server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    try:
        tls = Tls(ca=str(certificates / "ca.pem"), certificate=str(certificates / "client.pem"),
                  private_key=str(certificates / "client.key"), authority="pserver.paramserver.test")
        with Client(address, "t1", tls=tls, failover_s=0.5) as c:
            assert c.status().master_id == "leader"
        no_cert = Tls(ca=str(certificates / "ca.pem"), authority="pserver.paramserver.test")
        with Client(address, "t1", tls=no_cert, timeout_s=2, failover_s=0.5) as c:
            with pytest.raises(paramserver.ParamServerError, match="UNAVAILABLE"):
                c.status()
        with Client(address, "t1", timeout_s=2, failover_s=0.5) as c:  # plaintext to a TLS server
            with pytest.raises(paramserver.ParamServerError, match="UNAVAILABLE"):
                c.status()
    finally:
        server.stop(0)
    with pytest.raises(ValueError, match="both certificate and private_key"):
        Tls(certificate="c.pem")
    with pytest.raises(ValueError, match="cannot read"):
        Tls(ca=str(certificates / "missing.pem")).credentials()


@pytest.mark.skipif(not (have("mypy") and have("torch")),
                    reason="mypy or torch is not installed (the venv of scripts/python-venv.sh has both)")
def test_the_package_is_mypy_strict_clean():
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(CLIENT, "pyproject.toml"),
                        "--cache-dir", os.devnull, "paramserver"], cwd=os.path.dirname(PACKAGE),
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found" in r.stdout


@contextlib.contextmanager
def build_lock():
    """The POSIX lock (fcntl, as Java's FileChannel.lock) on $PARAMSERVER_BUILD_LOCK, when set."""
    path = os.environ.get("PARAMSERVER_BUILD_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(f, fcntl.LOCK_UN)


@pytest.mark.skipif(not (have("build") and have("grpc_tools")),
                    reason="build and grpcio-tools are not installed (the venv of scripts/python-venv.sh has them)")
def test_python_m_build_makes_an_sdist_and_from_it_a_wheel_with_generated_stubs(tmp_path):
    # the sdist writes its egg-info into the source tree: builds side by side (integration-tests'
    # JVMs) take turns, under the file lock PARAMSERVER_BUILD_LOCK names
    with build_lock():
        r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), CLIENT],
                           capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    version = pom_version().replace("-SNAPSHOT", "")
    sdist = tmp_path / ("paramserver-%s.tar.gz" % version)
    (wheel,) = glob.glob(str(tmp_path / ("paramserver-%s-py3-none-any.whl" % version)))
    assert sdist.exists()
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read("paramserver-%s.dist-info/METADATA" % version).decode()
        built = z.read("paramserver/_version.py").decode()
    assert {"paramserver/py.typed", "paramserver/v1/pserver_pb2.py", "paramserver/v1/pserver_pb2.pyi",
            "paramserver/v1/pserver_pb2_grpc.py", "paramserver-%s.dist-info/licenses/LICENSE" % version} <= names
    assert '__version__ = "%s"' % version in built
    assert "License-Expression: Apache-2.0" in meta
    bounds = dict(re.findall(r"^Requires-Dist: (protobuf|grpcio)(\S*)", meta, re.M))
    import google.protobuf
    low = re.search(r">=([\d.]+)", bounds["protobuf"]).group(1)
    assert tuple(map(int, low.split("."))) <= tuple(map(int, google.protobuf.__version__.split(".")[:3]))
    assert ">=" in bounds["grpcio"] and "<2" in bounds["grpcio"]


def test_admin_sends_the_token_and_says_when_it_is_refused(monkeypatch):
    import http.server
    import json
    import threading

    from paramserver.admin import Admin

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.headers.get("Authorization") == "Bearer s3cret" and self.path == "/admin/job"
            body = json.dumps({"state": "RUNNING"} if ok else {"error": "bad token"}).encode()
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % server.server_port
    try:
        assert Admin(url, "s3cret").job() == {"state": "RUNNING"}
        monkeypatch.setenv("PARAMSERVER_ADMIN_TOKEN", "s3cret")
        assert Admin(url).job()["state"] == "RUNNING"
        with pytest.raises(paramserver.ParamServerError, match="401, the admin token was refused"):
            Admin(url, "wrong").job()
        monkeypatch.delenv("PARAMSERVER_ADMIN_TOKEN")
        with pytest.raises(ValueError, match="PARAMSERVER_ADMIN_TOKEN"):
            Admin(url)
    finally:
        server.shutdown()
