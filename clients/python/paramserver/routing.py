"""What a client must compute itself (docs/reference/routing.md): the owner of a sparse row, and how
a step's data is cut into requests per pserver; and the elastic placement (docs/explanation/elastic.md):
rows map to slots, slots and dense blocks to pservers under a placement epoch (SlotMap)."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Tuple, TypeVar

import numpy as np


class Block(Protocol):
    """A dense block as the master's Placement lists it (paramserver.v1.BlockPlacement)."""

    @property
    def name(self) -> str: ...
    @property
    def block(self) -> int: ...
    @property
    def length(self) -> int: ...
    @property
    def pserver(self) -> int: ...


B = TypeVar("B", bound=Block)

if TYPE_CHECKING:
    from .v1.placement_pb2 import PlacementMap

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
# Largest dense tensor payload of one request, well under gRPC's 4 MiB default cap (as Java's
# RequestPlanner.MAX_REQUEST_BYTES).
MAX_REQUEST_BYTES = 2 * 1024 * 1024


def owner_of_row(table: str, row: int, pservers: int) -> int:
    """The pserver index that owns row `row` (a signed 64-bit id) of sparse table `table`:
    h = (row * 0x9E3779B97F4A7C15 mod 2^64) XOR crc32(utf8(table)); h ^= h >>> 31;
    floorMod(h as signed 64-bit, pservers). Equal to Java's ShardPlacement.ownerOfRow."""
    if pservers <= 0:
        raise ValueError("need at least one pserver, got %d" % pservers)
    return _mix(table_hash(table), row) % pservers  # Python's % with a positive divisor is floorMod


def table_hash(table: str) -> int:
    """The table's part of the row routing: CRC-32 of its UTF-8 name (Java's ShardPlacement.tableHash)."""
    return zlib.crc32(table.encode("utf-8"))


def _mix(table_crc: int, row: int) -> int:
    """h = (row * 0x9E3779B97F4A7C15 mod 2^64) XOR crc; h ^= h >>> 31; as a signed 64-bit integer."""
    if not -(1 << 63) <= row < (1 << 63):
        raise ValueError("row id %d is not a signed 64-bit integer" % row)
    h = ((row * GOLDEN) & MASK64) ^ table_crc
    h ^= h >> 31
    return h - (1 << 64) if h >= 1 << 63 else h


def slots_of_rows(table: str, rows: "np.ndarray[Any, np.dtype[np.int64]]", slots: int
                  ) -> "np.ndarray[Any, np.dtype[np.int64]]":
    """slot_of of every row of an int64 array: _mix in uint64 arithmetic (wrapping as Java's long),
    then floorMod by `slots`."""
    with np.errstate(over="ignore"):
        h = rows.astype(np.int64, copy=False).view(np.uint64) * np.uint64(GOLDEN)
    h ^= np.uint64(table_hash(table))
    h ^= h >> np.uint64(31)
    out: "np.ndarray[Any, np.dtype[np.int64]]" = np.mod(h.view(np.int64), slots)
    return out


def rows_by_owner(table: str, ids: Iterable[int], pservers: int) -> Dict[int, List[int]]:
    """{pserver: ascending distinct ids it owns} (the order Java's RequestPlanner sends)."""
    out: Dict[int, List[int]] = {}
    for r in sorted(set(int(i) for i in ids)):
        out.setdefault(owner_of_row(table, r, pservers), []).append(r)
    return out


def groups(blocks: Iterable[B], max_bytes: int = MAX_REQUEST_BYTES, element_bytes: int = 4) -> List[List[B]]:
    """Cuts blocks (objects with .length, in order) into consecutive runs of at most max_bytes of
    data each; a block larger than max_bytes travels alone."""
    out: List[List[B]] = []
    cur: List[B] = []
    size = 0
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


def plan(placement_blocks: Iterable[B], pservers: int, sync: bool = False, max_bytes: int = MAX_REQUEST_BYTES,
         slot_map: Optional[SlotMap] = None) -> Dict[int, List[List[B]]]:
    """{pserver: [group, ...]}: the dense blocks of a Placement, per owning pserver in (name, block)
    order, cut into request-sized groups; in SYNC mode one group per pserver (possibly empty: the
    barrier counts exactly one push per trainer and pserver). With `slot_map` (a SlotMap) the blocks
    go to the owners it names, and a pserver that owns nothing in it gets nothing, not even in SYNC
    mode (Java's RequestPlanner)."""
    by_ps: Dict[int, List[B]]
    owner: Callable[[B], int]
    if slot_map is None:
        by_ps = {ps: [] for ps in range(pservers)}
        owner = _placed_on
    else:
        by_ps = {ps: [] for ps in range(slot_map.pservers) if slot_map.owns_anything(ps)}
        owner = slot_map.block_owner
    for b in sorted(placement_blocks, key=lambda b: (b.name, b.block)):
        by_ps[owner(b)].append(b)
    if sync:
        return {ps: [blocks] for ps, blocks in by_ps.items()}
    return {ps: groups(blocks, max_bytes) for ps, blocks in by_ps.items()}


def _placed_on(b: Block) -> int:
    return b.pserver


# ---- elastic placement (docs/explanation/elastic.md) ----
MIN_SLOTS = 16384  # the fewest row slots a map has; the real count is a multiple of N0


def slots_for(pservers: int) -> int:
    """The slot count of a job that starts with `pservers`: N0 * ceil(16384 / N0) (Java's
    SlotMap.slotsFor)."""
    if pservers <= 0:
        raise ValueError("need at least one pserver, got %d" % pservers)
    return pservers * ((MIN_SLOTS + pservers - 1) // pservers)


def slot_of(table: str, row: int, slots: int) -> int:
    """The slot of row `row` of sparse table `table`: floorMod(mix(table, row), slots), mix as in
    owner_of_row (Java's SlotMap.slotOf)."""
    return _mix(table_hash(table), row) % slots


class SlotMap:
    """Where rows and dense blocks live under one placement epoch, as Java's SlotMap: row -> slot by
    the routing hash, slot -> owner, and an owner per dense block. Immutable: a request is planned
    against one map from start to end."""

    def __init__(self, epoch: int, pservers: int, slot_owners: Iterable[int],
                 block_owners: Mapping[Tuple[str, int], int]) -> None:
        self.epoch, self.pservers = int(epoch), int(pservers)
        self.slot_owners = list(slot_owners)
        self.block_owners = dict(block_owners)  # (name, block) -> owner
        counts = [0] * self.pservers
        for o in self.slot_owners:
            counts[o] += 1
        for o in self.block_owners.values():
            counts[o] += 1
        self._owning = {ps for ps, c in enumerate(counts) if c}
        self._owners: "Optional[np.ndarray[Any, np.dtype[np.int64]]]" = None

    @property
    def slots(self) -> int:
        return len(self.slot_owners)

    @classmethod
    def initial(cls, placement_blocks: Iterable[Block], pservers: int) -> SlotMap:
        """The initial map (epoch 0) of `pservers`: slot s on s mod pservers (so rows go where
        owner_of_row(table, row, pservers) says) and the dense blocks where the master's Placement
        puts them (the size-balanced rule, Java's SlotMap.initial)."""
        slots = slots_for(pservers)
        return cls(0, pservers, [s % pservers for s in range(slots)],
                   {(b.name, b.block): b.pserver for b in placement_blocks})

    @classmethod
    def from_proto(cls, m: PlacementMap) -> SlotMap:
        """The map of a paramserver.v1.PlacementMap; ValueError when it is inconsistent (as Java's
        SlotMap.fromProto: no pservers, a slot count that does not match, an owner out of range)."""
        n = m.pservers
        if n <= 0:
            raise ValueError("placement epoch %d has no pservers" % m.epoch)
        if m.slots <= 0 or len(m.slot_owners) != m.slots:
            raise ValueError("placement epoch %d lists %d slot owners for %d slots"
                             % (m.epoch, len(m.slot_owners), m.slots))
        for s, o in enumerate(m.slot_owners):
            if o >= n:
                raise ValueError("placement epoch %d gives slot %d to pserver %d of %d" % (m.epoch, s, o, n))
        blocks: Dict[Tuple[str, int], int] = {}
        for b in m.dense_owners:
            if b.owner >= n:
                raise ValueError("placement epoch %d gives block %s#%d to pserver %d of %d"
                                 % (m.epoch, b.name, b.block, b.owner, n))
            blocks[(b.name, b.block)] = b.owner
        return cls(m.epoch, n, m.slot_owners, blocks)

    def slot_of(self, table: str, row: int) -> int:
        return slot_of(table, row, len(self.slot_owners))

    def owner_of_row(self, table: str, row: int) -> int:
        return self.slot_owners[self.slot_of(table, row)]

    def owner_of_block(self, name: str, block: int) -> int:
        """The owner of dense block name#block, or -1 when the map does not place it."""
        return self.block_owners.get((name, block), -1)

    def block_owner(self, b: Block) -> int:
        """The owner of a block (an object with .name and .block); ValueError when not placed."""
        o = self.owner_of_block(b.name, b.block)
        if o < 0:
            raise ValueError("placement epoch %d does not place block %s#%d" % (self.epoch, b.name, b.block))
        return o

    def owns_anything(self, ps: int) -> bool:
        """Whether pserver `ps` owns a slot or a block: a new pserver (being filled by moves) or an
        emptied one owns nothing and is never initialised nor pushed to."""
        return ps in self._owning

    def owning(self) -> List[int]:
        """The indexes that own something, ascending."""
        return sorted(self._owning)

    def rows_by_owner(self, table: str, ids: Iterable[int]) -> Dict[int, List[int]]:
        """{pserver: ascending distinct ids it owns}."""
        unique = np.unique(np.fromiter((int(i) for i in ids), np.int64) if not isinstance(ids, np.ndarray)
                           else ids.astype(np.int64, copy=False))
        owners = self.owners_of_rows(table, unique)
        return {int(ps): unique[owners == ps].tolist() for ps in np.unique(owners)}

    def owners_of_rows(self, table: str, rows: "np.ndarray[Any, np.dtype[np.int64]]"
                       ) -> "np.ndarray[Any, np.dtype[np.int64]]":
        """owner_of_row of every row of an int64 array, vectorised (the same hash in uint64 arithmetic)."""
        if self._owners is None:
            self._owners = np.asarray(self.slot_owners, np.int64)
        owners: "np.ndarray[Any, np.dtype[np.int64]]" = self._owners[slots_of_rows(table, rows, len(self.slot_owners))]
        return owners

    def __repr__(self) -> str:
        return "SlotMap(epoch %d, %d pservers, %d slots, %d blocks)" % (
            self.epoch, self.pservers, len(self.slot_owners), len(self.block_owners))
