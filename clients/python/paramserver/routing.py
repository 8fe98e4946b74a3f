"""What a client must compute itself (docs/reference/routing.md): the owner of a sparse row, and how
a step's data is cut into requests per pserver."""

import zlib

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
# Largest dense tensor payload of one request, well under gRPC's 4 MiB default cap (as Java's
# RequestPlanner.MAX_REQUEST_BYTES).
MAX_REQUEST_BYTES = 2 * 1024 * 1024


def owner_of_row(table, row, pservers):
    """The pserver index that owns row `row` (a signed 64-bit id) of sparse table `table`:
    h = (row * 0x9E3779B97F4A7C15 mod 2^64) XOR crc32(utf8(table)); h ^= h >>> 31;
    floorMod(h as signed 64-bit, pservers). Equal to Java's ShardPlacement.ownerOfRow."""
    if pservers <= 0:
        raise ValueError("need at least one pserver, got %d" % pservers)
    if not -(1 << 63) <= row < (1 << 63):
        raise ValueError("row id %d is not a signed 64-bit integer" % row)
    h = ((row * GOLDEN) & MASK64) ^ zlib.crc32(table.encode("utf-8"))
    h ^= h >> 31
    if h >= 1 << 63:
        h -= 1 << 64
    return h % pservers  # Python's % with a positive divisor is floorMod


def rows_by_owner(table, ids, pservers):
    """{pserver: ascending distinct ids it owns} (the order Java's RequestPlanner sends)."""
    out = {}
    for r in sorted(set(int(i) for i in ids)):
        out.setdefault(owner_of_row(table, r, pservers), []).append(r)
    return out


def groups(blocks, max_bytes=MAX_REQUEST_BYTES, element_bytes=4):
    """Cuts blocks (objects with .length, in order) into consecutive runs of at most max_bytes of
    data each; a block larger than max_bytes travels alone."""
    out, cur, size = [], [], 0
    for b in blocks:
        n = b.length * element_bytes
        if cur and size + n > max_bytes:
            out.append(cur)
            cur, size = [], 0
        cur.append(b)
        size += n
    if cur:
        out.append(cur)
    return out


def plan(placement_blocks, pservers, sync=False, max_bytes=MAX_REQUEST_BYTES):
    """{pserver: [group, ...]}: the dense blocks of a Placement, per owning pserver in (name, block)
    order, cut into request-sized groups; in SYNC mode one group per pserver (possibly empty: the
    barrier counts exactly one push per trainer and pserver)."""
    by_ps = {ps: [] for ps in range(pservers)}
    for b in sorted(placement_blocks, key=lambda b: (b.name, b.block)):
        by_ps[b.pserver].append(b)
    if sync:
        return {ps: [blocks] for ps, blocks in by_ps.items()}
    return {ps: groups(blocks, max_bytes) for ps, blocks in by_ps.items()}
