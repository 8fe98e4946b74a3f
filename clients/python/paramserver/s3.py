"""s3:// objects for the training data: ranged reads (a task's chunks) and uploads, signed with AWS
Signature Version 4, over the standard library's HTTP (no boto3).

Where the store is, as the Java services read it (docs/reference/configuration.md, s3.*):
PARAMSERVER_S3_ENDPOINT (for MinIO, Ceph and other S3-compatible stores, e.g. http://minio:9000;
empty: AWS, https://s3.<region>.amazonaws.com), PARAMSERVER_S3_REGION (default us-east-1),
PARAMSERVER_S3_PATH_STYLE (true: http://endpoint/bucket/key, the default with an endpoint; false:
http://bucket.endpoint/key, the default on AWS); credentials AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (without them, requests go unsigned)."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

__all__ = ["S3Settings", "S3Error", "read_range", "put_object", "size", "is_s3"]


class S3Error(OSError):
    """An S3 request that failed; the message names the object, the HTTP status and S3's code."""


@dataclass(frozen=True)
class S3Settings:
    endpoint: str = ""
    region: str = "us-east-1"
    path_style: Optional[bool] = None
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    session_token: str = field(default="", repr=False)
    timeout_s: float = 60.0

    @staticmethod
    def from_env() -> "S3Settings":
        e = os.environ
        style = e.get("PARAMSERVER_S3_PATH_STYLE", "").strip().lower()
        return S3Settings(e.get("PARAMSERVER_S3_ENDPOINT", "").strip(),
                          e.get("PARAMSERVER_S3_REGION", "").strip() or "us-east-1",
                          None if not style else style in ("1", "true", "yes"),
                          e.get("AWS_ACCESS_KEY_ID", ""), e.get("AWS_SECRET_ACCESS_KEY", ""),
                          e.get("AWS_SESSION_TOKEN", ""))


def is_s3(path: str) -> bool:
    return path.startswith("s3://")


def _split(url: str) -> Tuple[str, str]:
    parsed = urllib.parse.urlparse(url)
    bucket, key = parsed.netloc, parsed.path.lstrip("/")
    if parsed.scheme != "s3" or not bucket or not key:
        raise ValueError("not an s3://bucket/key address: %r" % url)
    return bucket, key


def _url(s: S3Settings, bucket: str, key: str) -> Tuple[str, str, str]:
    """(url, host, canonical path) of the object."""
    endpoint = s.endpoint or "https://s3.%s.amazonaws.com" % s.region
    if "://" not in endpoint:
        endpoint = "https://" + endpoint
    ep = urllib.parse.urlparse(endpoint)
    path_style = s.path_style if s.path_style is not None else bool(s.endpoint)
    quoted = urllib.parse.quote(key, safe="/~")
    if path_style:
        host, path = ep.netloc, "%s/%s/%s" % (ep.path.rstrip("/"), bucket, quoted)
    else:
        host, path = "%s.%s" % (bucket, ep.netloc), "%s/%s" % (ep.path.rstrip("/"), quoted)
    return "%s://%s%s" % (ep.scheme, host, path), host, path


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _signed(s: S3Settings, method: str, host: str, path: str, payload_hash: str,
            extra: Optional[Dict[str, str]] = None, now: Optional[datetime.datetime] = None) -> Dict[str, str]:
    """The headers of a SigV4-signed request: `extra` (signed too), host, x-amz-date,
    x-amz-content-sha256 and authorization."""
    t = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = t.strftime("%Y%m%dT%H%M%SZ"), t.strftime("%Y%m%d")
    headers = {k.lower(): v for k, v in (extra or {}).items()}
    headers.update({"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date})
    if s.session_token:
        headers["x-amz-security-token"] = s.session_token
    if not s.access_key:
        return headers
    names = sorted(headers)
    canonical = "\n".join([method, path, "", "".join("%s:%s\n" % (n, headers[n].strip()) for n in names),
                           ";".join(names), payload_hash])
    scope = "%s/%s/s3/aws4_request" % (day, s.region)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + s.secret_key).encode(), day), s.region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        s.access_key, scope, ";".join(names), signature)
    return headers


def _request(url: str, method: str, data: Optional[bytes], extra: Optional[Dict[str, str]],
             settings: Optional[S3Settings]) -> Tuple[bytes, Dict[str, str]]:
    s = settings or S3Settings.from_env()
    bucket, key = _split(url)
    http_url, host, path = _url(s, bucket, key)
    payload = hashlib.sha256(data or b"").hexdigest()
    headers = _signed(s, method, host, path, payload, extra)
    req = urllib.request.Request(http_url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=s.timeout_s) as r:
            return r.read(), dict(r.headers.items())
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        code = body.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in body else ""
        raise S3Error("%s %s: HTTP %d %s (endpoint %s)" % (method, url, e.code, code or e.reason,
                                                            s.endpoint or "AWS")) from e
    except urllib.error.URLError as e:
        raise S3Error("%s %s: cannot reach %s: %s" % (method, url, s.endpoint or "AWS", e.reason)) from e


def read_range(url: str, offset: int, length: int, settings: Optional[S3Settings] = None) -> bytes:
    """Bytes [offset, offset + length) of the object (fewer at its end)."""
    if length <= 0:
        return b""
    data, _ = _request(url, "GET", None, {"range": "bytes=%d-%d" % (offset, offset + length - 1)}, settings)
    return data


def size(url: str, settings: Optional[S3Settings] = None) -> int:
    """The object's size in bytes."""
    _, headers = _request(url, "HEAD", None, None, settings)
    return int({k.lower(): v for k, v in headers.items()}.get("content-length", "0"))


def put_object(url: str, data: bytes, settings: Optional[S3Settings] = None) -> None:
    """Writes the object (one PUT: up to 5 GB)."""
    _request(url, "PUT", data, {"content-type": "application/octet-stream"}, settings)
