#!/usr/bin/env python3
"""Scripted client of the end-to-end lookup and predict test (integration-tests
PythonServingLookupTest), run against a real serving replica following a training job; not collected
by pytest.

Looks up --ids of --table with min_version {--shard: --sequence} through paramserver.lookup, then
asks for a table the model does not have; with --predict, predicts one example per id list of
--predict (sparse ids, the lists separated by ';') on the same min_version through
paramserver.predict, then an example with one dense feature more than the model's --dense. Prints

    PYRESULT sequence=<shard's sequence in the version read> number=<version number>
             defaulted=<positions, comma-separated> values=<the float32 values, little-endian, hex>
             unknown=<class of the error for the unknown table>
             [predict_sequence=<shard's sequence in the version predicted on> classes=<classes>
              probabilities=<float32 probabilities, little-endian, hex> predicted=<classes, comma-separated>
              bad=<class of the error for the bad example>]

on one line. Exit 0 when the calls answered as expected, 1 on another paramserver error.
"""

import argparse
import importlib.util
import os
import sys

if importlib.util.find_spec("paramserver") is None:  # a checkout run without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from paramserver import BadArgument, Features, ParamServerError, UnknownParameter, lookup, predict  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serving", required=True, help="the serving replica's gRPC address")
    ap.add_argument("--table", required=True)
    ap.add_argument("--ids", required=True, help="comma-separated row ids")
    ap.add_argument("--width", type=int, default=0)
    ap.add_argument("--shard", type=int, default=0)
    ap.add_argument("--sequence", type=int, default=0)
    ap.add_argument("--predict", default="", help="examples' sparse ids: ids,ids;ids,...")
    ap.add_argument("--dense", type=int, default=0, help="the model's dense features")
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
    result = "PYRESULT sequence=%d number=%d defaulted=%s values=%s unknown=%s" % (
        rows.version.shards[a.shard].sequence, rows.version.number,
        ",".join(str(d) for d in rows.defaulted) or "-", rows.values.astype("<f4").tobytes().hex(), unknown)
    if a.predict:
        examples = [Features(dense=[0.5] * a.dense, sparse_ids=[int(i) for i in ids.split(",") if i])
                    for ids in a.predict.split(";")]
        try:
            p = predict(a.serving, examples, min_version={a.shard: a.sequence}, wait_ms=15000, timeout=30.0)
        except ParamServerError as e:
            print("predict failed: %s" % e)
            return 1
        bad = "none"
        try:
            predict(a.serving, [Features(dense=[0.5] * (a.dense + 1))])
        except BadArgument as e:
            bad = type(e).__name__
            print("bad example: %s" % e)
        result += " predict_sequence=%d classes=%d probabilities=%s predicted=%s bad=%s" % (
            p.version.shards[a.shard].sequence, p.classes, p.probabilities.astype("<f4").tobytes().hex(),
            ",".join(str(c) for c in p.predicted.tolist()), bad)
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
