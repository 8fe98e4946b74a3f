import os
from types import SimpleNamespace as B

import pytest

from conftest import REPO
from paramserver import routing


def vectors():
    with open(os.path.join(REPO, "docs", "reference", "routing-vectors.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or line.startswith("table\t") or not line.strip():
                continue
            table, row, pservers, owner = line.rstrip("\n").split("\t")
            yield table, int(row), int(pservers), int(owner)


def test_owner_of_row_matches_every_shared_vector():
    checked = [(t, r, n) for t, r, n, o in vectors() if routing.owner_of_row(t, r, n) != o]
    all_ = list(vectors())
    assert len(all_) >= 300 and not checked
    assert any(ord(c) > 127 for t, *_ in all_ for c in t)
    assert {-(1 << 63), (1 << 63) - 1} <= {r for _, r, _, _ in all_}


def test_owner_of_row_rejects_ids_beyond_64_bits_and_no_pservers():
    with pytest.raises(ValueError, match="64-bit"):
        routing.owner_of_row("emb", 1 << 63, 2)
    with pytest.raises(ValueError, match="at least one pserver"):
        routing.owner_of_row("emb", 1, 0)


def test_rows_by_owner_sorts_and_dedups_ids_per_pserver():
    by = routing.rows_by_owner("emb", [5, 3, 5, -1, 1 << 40], 3)
    assert sorted(r for rows in by.values() for r in rows) == [-1, 3, 5, 1 << 40]
    for ps, rows in by.items():
        assert rows == sorted(rows) and all(routing.owner_of_row("emb", r, 3) == ps for r in rows)


def blocks(*specs):
    return [B(name=n, block=b, length=l, pserver=p) for n, b, l, p in specs]


def test_groups_cap_requests_at_2_mib_and_send_a_bigger_block_alone():
    mib = 1 << 18  # floats per MiB
    g = routing.groups(blocks(("a", 0, mib, 0), ("a", 1, mib, 0), ("b", 0, 10, 0), ("c", 0, 3 * mib, 0), ("d", 0, 1, 0)))
    assert [[b.name for b in grp] for grp in g] == [["a", "a"], ["b"], ["c"], ["d"]]
    assert all(sum(b.length for b in grp) * 4 <= routing.MAX_REQUEST_BYTES or len(grp) == 1 for grp in g)


def test_plan_groups_by_pserver_in_name_block_order_and_sync_sends_one_per_pserver():
    bs = blocks(("w", 1, 5, 1), ("b", 0, 5, 0), ("w", 0, 5, 1))
    p = routing.plan(bs, 3)
    assert [[(b.name, b.block) for b in g] for g in p[1]] == [[("w", 0), ("w", 1)]]
    assert p[2] == [] and len(p[0]) == 1
    s = routing.plan(bs, 3, sync=True)
    assert [len(s[ps]) for ps in range(3)] == [1, 1, 1] and s[2] == [[]]
