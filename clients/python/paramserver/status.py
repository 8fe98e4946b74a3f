"""A Python trainer's GET /admin/status, as the Java trainer's: the leader master's console and
`psctl status` read it (with the job's admin token) and show the trainer's state, pass, task, tasks
done, samples and samples per second, and loss beside the Java trainers'.

The trainer announces the endpoint when it joins (JoinRequest.endpoint, "host:port"); the master
accepts it only if the host is the one the Join call came from. Without an admin token (argument,
or $PARAMSERVER_ADMIN_TOKEN) there is no endpoint, as a Java service refuses every admin call
without one: the console then lists the trainer as JOINED_VIA_MASTER, with no progress.
Standard library only; answers on a daemon thread."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import logging
import os
import socket
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, Optional, Tuple

__all__ = ["Progress", "StatusServer", "advertised_host"]
log = logging.getLogger("paramserver.status")
HOST_ENV = "PARAMSERVER_STATUS_HOST"
RATE_WINDOW_S = 10.0


class Progress:
    """A trainer's progress, as TrainingProgress.details() of the Java trainer: updated by the
    training thread, read by the status thread."""

    def __init__(self) -> None:
        self.state, self.pass_, self.task = "STARTING", 0, -1
        self.tasks_done = self.batches = self.samples = 0
        self.loss: Optional[float] = None
        self._lock = threading.Lock()
        self._marks: Deque[Tuple[float, int]] = deque()

    def batch(self, samples: int, loss: Optional[float]) -> None:
        now = time.monotonic()
        with self._lock:
            self.state, self.batches, self.samples = "TRAINING", self.batches + 1, self.samples + samples
            if loss is not None:
                self.loss = loss
            self._marks.append((now, self.samples))
            while len(self._marks) > 2 and now - self._marks[1][0] > RATE_WINDOW_S:
                self._marks.popleft()

    def details(self) -> Dict[str, Any]:
        with self._lock:
            rate = 0.0
            if len(self._marks) > 1:
                (t0, s0), (t1, s1) = self._marks[0], self._marks[-1]
                rate = (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0
            return {"pass": self.pass_, "task": self.task, "tasksDone": self.tasks_done,
                    "batches": self.batches, "samples": self.samples, "samplesPerSecond": rate,
                    "loss": self.loss}


class StatusServer:
    """GET /admin/status on `port` (0: a free one) of every interface, answering the JSON of
    {"role": "trainer", "state", "identity", **details()} to `Authorization: Bearer <token>`."""

    def __init__(self, token: str, identity: Callable[[], str], progress: Progress, port: int = 0) -> None:
        if not token:
            raise ValueError("StatusServer needs the job's admin token")
        digest = hashlib.sha256(token.encode()).digest()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server name)
                header = self.headers.get("Authorization", "")
                given = hashlib.sha256(header[7:].strip().encode()).digest()
                if not header.lower().startswith("bearer ") or not hmac.compare_digest(given, digest):
                    return self._send(401, {"error": "unauthorized", "message": "wrong or missing admin token"})
                if self.path.split("?")[0] != "/admin/status":
                    return self._send(404, {"error": "not_found", "message": "only GET /admin/status"})
                body = {"role": "trainer", "state": progress.state, "identity": identity()}
                body.update(progress.details())
                self._send(200, body)

            def _send(self, code: int, body: Dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the http.server name)
                pass

        self._server = http.server.ThreadingHTTPServer(("", port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="paramserver-status", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def advertised_host(master: str) -> str:
    """The address the master sees this process's calls come from: $PARAMSERVER_STATUS_HOST (or
    $PARAMSERVER_ADVERTISE_HOST, the pod's IP in the JobSet and the Kubeflow runtime), else the
    local address of the route to the master (`master` is host:port)."""
    env = os.environ.get(HOST_ENV) or os.environ.get("PARAMSERVER_ADVERTISE_HOST")
    if env:
        return env
    host = master.rsplit(":", 1)[0].strip("[]")
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((host, 9))  # UDP: nothing is sent, the kernel picks the route
        return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()
