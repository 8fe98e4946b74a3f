"""The admin endpoints (/admin/**) of a master or pserver over HTTP, with the admin token
(`Authorization: Bearer <token>`, the services' paramserver.admin.token): the job's view as the
console and `psctl status` show it.

    admin = Admin("http://127.0.0.1:8081", token)   # token None: $PARAMSERVER_ADMIN_TOKEN
    print(admin.job()["state"])

Standard library only (urllib); `ca` checks an https server's certificate against that PEM file."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

from .errors import ParamServerError

__all__ = ["Admin"]
TOKEN_ENV = "PARAMSERVER_ADMIN_TOKEN"


class Admin:
    def __init__(self, url: str, token: Optional[str] = None, ca: Optional[str] = None,
                 timeout_s: float = 10.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("Admin: url must start with http:// or https://, got %r" % url)
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        if not token:
            raise ValueError("Admin: no admin token: pass token= or set %s (the services' "
                             "paramserver.admin.token; run-local's cluster.json has it as adminToken)" % TOKEN_ENV)
        self.url, self._token, self.timeout_s = url.rstrip("/"), token, timeout_s
        self._context = ssl.create_default_context(cafile=ca) if ca else None

    def get(self, path: str) -> Any:
        """The JSON answer of GET `path` (e.g. /admin/job)."""
        req = urllib.request.Request(self.url + path, headers={
            "Authorization": "Bearer " + self._token, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=self._context) as r:
                return json.loads(r.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            body = e.read().decode("utf-8", "replace")[:300]
            if e.code == 401:
                raise ParamServerError("GET %s%s: 401, the admin token was refused (%s)" % (self.url, path, body)) from e
            raise ParamServerError("GET %s%s: HTTP %d: %s" % (self.url, path, e.code, body)) from e
        except (urllib.error.URLError, OSError) as e:
            raise ParamServerError("GET %s%s: %s" % (self.url, path, e)) from e

    def job(self) -> Dict[str, Any]:
        """The master's view of the job (GET /admin/job): state, passes, trainers, pservers, ..."""
        view: Dict[str, Any] = self.get("/admin/job")
        return view
