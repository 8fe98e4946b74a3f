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


# ---- elastic placement: SlotMap (docs/explanation/elastic.md) ----
def slot_vectors():
    with open(os.path.join(REPO, "docs", "reference", "slot-vectors.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or line.startswith("kind\t") or not line.strip():
                continue
            kind, table, row, slots, value = line.rstrip("\n").split("\t")
            yield kind, table, int(row), int(slots), int(value)


def vector_map():
    from paramserver.v1 import placement_pb2
    with open(os.path.join(REPO, "docs", "reference", "slot-vectors-map.pb"), "rb") as f:
        return routing.SlotMap.from_proto(placement_pb2.PlacementMap.FromString(f.read()))


def test_slot_map_matches_every_shared_java_vector():
    m = vector_map()
    assert m.epoch > 0 and m.pservers == 3 and m.slots == 16384
    wrong, kinds = [], {}
    for kind, table, row, slots, value in slot_vectors():
        kinds[kind] = kinds.get(kind, 0) + 1
        got = {"slot": lambda: routing.slot_of(table, row, slots), "row": lambda: m.owner_of_row(table, row),
               "block": lambda: m.owner_of_block(table, row)}[kind]()
        if got != value:
            wrong.append((kind, table, row, slots, value, got))
    assert not wrong
    assert kinds["slot"] >= 150 and kinds["row"] >= 150 and kinds["block"] >= 20
    assert {r for k, _, r, _, _ in slot_vectors() if k == "row"} >= {-(1 << 63), (1 << 63) - 1}


def test_initial_slot_map_routes_as_the_fixed_rule_and_places_blocks_as_the_placement():
    for n in (1, 2, 3, 7):
        assert routing.slots_for(n) % n == 0 and routing.slots_for(n) >= routing.MIN_SLOTS
        m = routing.SlotMap.initial(blocks(("w", 0, 5, n - 1), ("b", 0, 5, 0)), n)
        assert m.epoch == 0 and m.owner_of_block("w", 0) == n - 1 and m.owner_of_block("w", 1) == -1
        for table, row, _, _ in list(vectors())[::7]:
            assert m.owner_of_row(table, row) == routing.owner_of_row(table, row, n)
        assert m.rows_by_owner("emb", [5, 3, 5, -1]) == routing.rows_by_owner("emb", [5, 3, 5, -1], n)
    assert routing.slots_for(3) == 16386


def test_slot_map_from_proto_refuses_an_inconsistent_map_and_plans_by_its_owners():
    from paramserver.v1 import placement_pb2 as pl
    with pytest.raises(ValueError, match="no pservers"):
        routing.SlotMap.from_proto(pl.PlacementMap(epoch=3))
    with pytest.raises(ValueError, match="lists 1 slot owners for 2 slots"):
        routing.SlotMap.from_proto(pl.PlacementMap(epoch=3, pservers=2, slots=2, slot_owners=[0]))
    with pytest.raises(ValueError, match="gives slot 1 to pserver 2 of 2"):
        routing.SlotMap.from_proto(pl.PlacementMap(epoch=3, pservers=2, slots=2, slot_owners=[0, 2]))
    with pytest.raises(ValueError, match="block w#0 to pserver 5"):
        routing.SlotMap.from_proto(pl.PlacementMap(epoch=3, pservers=2, slots=2, slot_owners=[0, 1], dense_owners=[
            pl.BlockOwner(name="w", block=0, owner=5)]))
    # index 1 was emptied, index 2 holds everything: nothing is planned for 0 and 1, even in SYNC
    m = routing.SlotMap.from_proto(pl.PlacementMap(epoch=3, pservers=3, slots=2, slot_owners=[2, 2], dense_owners=[
        pl.BlockOwner(name="w", block=0, owner=2), pl.BlockOwner(name="w", block=1, owner=2)]))
    assert m.owning() == [2] and not m.owns_anything(1)
    bs = blocks(("w", 1, 5, 0), ("w", 0, 5, 1))
    assert [[(b.name, b.block) for b in g] for g in routing.plan(bs, 2, slot_map=m)[2]] == [[("w", 0), ("w", 1)]]
    assert list(routing.plan(bs, 2, sync=True, slot_map=m)) == [2]


def test_the_vectorised_owners_match_every_shared_vector():
    import numpy as np
    for n in sorted({n for _, _, n, _ in vectors()}):
        m = routing.SlotMap.initial([], n)
        for table in sorted({t for t, _, k, _ in vectors() if k == n}):
            rows = [(r, o) for t, r, k, o in vectors() if t == table and k == n]
            got = m.owners_of_rows(table, np.array([r for r, _ in rows], np.int64))
            assert got.tolist() == [o for _, o in rows], (table, n)
