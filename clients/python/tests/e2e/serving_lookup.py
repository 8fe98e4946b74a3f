#!/usr/bin/env python3
"""Scripted client of the end-to-end lookup test (integration-tests PythonServingLookupTest), run
against a real serving replica following a training job; not collected by pytest.

Looks up --ids of --table with min_version {--shard: --sequence} through paramserver.lookup, then
asks for a table the model does not have. Prints

    PYRESULT sequence=<shard's sequence in the version read> number=<version number>
             defaulted=<positions, comma-separated> values=<the float32 values, little-endian, hex>
             unknown=<class of the error for the unknown table>

on one line. Exit 0 when both calls answered as expected, 1 on another paramserver error.
"""

import argparse
import importlib.util
import os
import sys

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from paramserver import ParamServerError, UnknownParameter, lookup  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serving", required=True, help="the serving replica's gRPC address")
    ap.add_argument("--table", required=True)
    ap.add_argument("--ids", required=True, help="comma-separated row ids")
    ap.add_argument("--width", type=int, default=0)
    ap.add_argument("--shard", type=int, default=0)
    ap.add_argument("--sequence", type=int, default=0)
    a = ap.parse_args()
    ids = [int(i) for i in a.ids.split(",")]
    try:
        rows = lookup(a.serving, a.table, ids, width=a.width, min_version={a.shard: a.sequence},
                      wait_ms=15000, timeout=30.0)
    except ParamServerError as e:
        print("lookup failed: %s" % e)
        return 1
    unknown = "none"
    try:
        lookup(a.serving, a.table + "-missing", ids)
    except UnknownParameter as e:
        unknown = type(e).__name__
        print("unknown table: %s" % e)
    print("PYRESULT sequence=%d number=%d defaulted=%s values=%s unknown=%s" % (
        rows.version.shards[a.shard].sequence, rows.version.number,
        ",".join(str(d) for d in rows.defaulted) or "-", rows.values.astype("<f4").tobytes().hex(), unknown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
