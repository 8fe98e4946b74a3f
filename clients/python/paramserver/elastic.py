"""Requests refused with MOVED (docs/explanation/elastic.md, "Trainers"), as Java's Resplit and
ResentParts: a refused request (nothing of it applied) is cut into pieces, one per owner under a newer
SlotMap, and the pieces' answers are put back together as the refused request's would have been.

A push piece keeps the refused push's trainer id, session, step, flags and acknowledged_through,
names the server the push was first sent to in `origin` (its index + 1; a piece of a piece keeps the
first origin), so a pserver never takes it for a duplicate of its own part of the same step, and gets
a part number of its own (ResentParts): two pieces of one step may reach one server. Rows are cut by
their encoded bytes: no value is decoded or rounded again."""

from __future__ import annotations

import collections
import threading
from typing import Callable, Dict, List, Sequence, Tuple, Type, TypeVar, Union

from ._stubs import pb
from .routing import SlotMap

R = TypeVar("R", pb.PushGradientsResponse, pb.PullParametersResponse)

FIRST_PART = 1 << 15  # resent pieces take the upper half of a step's parts (0..65535)
LAST_PART = (1 << 16) - 1
_STEPS = 1 << 14  # step counters kept; the oldest go first


class ResentParts:
    """Part numbers for resent pieces: FIRST_PART or above, never given twice for one step."""

    def __init__(self) -> None:
        self._next: collections.OrderedDict[int, int] = collections.OrderedDict()
        self._lock = threading.Lock()

    def next(self, step: int) -> int:
        with self._lock:
            part = self._next.get(step, FIRST_PART)
            if part > LAST_PART:
                raise RuntimeError("step %d was cut into more than %d resent pieces: its placement keeps moving"
                                   % (step, LAST_PART - FIRST_PART + 1))
            self._next[step] = part + 1
            self._next.move_to_end(step)
            while len(self._next) > _STEPS:
                self._next.popitem(last=False)
            return part


def _owner(slot_map: SlotMap, name: str, block: int) -> int:
    owner = slot_map.owner_of_block(name, block)
    if owner < 0:
        raise ValueError("block %s#%d was refused with MOVED but %r lacks it" % (name, block, slot_map))
    return owner


def split_rows(rows: pb.SparseRows, slot_map: SlotMap) -> Dict[int, pb.SparseRows]:
    """{owner: SparseRows} of one SparseRows, each piece keeping its rows' encoded values."""
    n = len(rows.row_ids)
    if n == 0:
        return {}
    if len(rows.data) % n:
        raise ValueError("rows of %s: %d bytes do not divide into %d rows" % (rows.name, len(rows.data), n))
    width = len(rows.data) // n
    ids: Dict[int, List[int]] = {}
    data: Dict[int, List[bytes]] = {}
    for i, r in enumerate(rows.row_ids):
        o = slot_map.owner_of_row(rows.name, r)
        ids.setdefault(o, []).append(r)
        data.setdefault(o, []).append(rows.data[i * width:(i + 1) * width])
    return {o: pb.SparseRows(name=rows.name, dtype=rows.dtype, row_ids=ids[o], data=b"".join(data[o]))
            for o in sorted(ids)}


def split_push(refused_by: int, req: pb.PushGradientsRequest, slot_map: SlotMap,
               parts: Callable[[int], int]) -> List[Tuple[int, pb.PushGradientsRequest]]:
    """[(owner, piece)] of a PushGradientsRequest pserver `refused_by` refused, by owner (ascending)
    under `slot_map`; `parts(step)` gives each piece its part. A push without gradients (a keep-pace
    push) still goes, as one piece, to the server it was sent to."""
    origin = req.origin or refused_by + 1
    template = pb.PushGradientsRequest()
    template.CopyFrom(req)
    template.ClearField("gradients")
    template.ClearField("sparse_gradients")
    template.origin = origin
    # the refused request's identity: a server that knows it as applied answers the piece as a duplicate
    template.resent_from.add(origin=origin, part=req.part)
    pieces: Dict[int, pb.PushGradientsRequest] = {}

    def piece(owner: int) -> pb.PushGradientsRequest:
        if owner not in pieces:
            p = pb.PushGradientsRequest()
            p.CopyFrom(template)
            pieces[owner] = p
        return pieces[owner]

    for g in req.gradients:
        piece(_owner(slot_map, g.name, g.block)).gradients.append(g)
    for rows in req.sparse_gradients:
        for owner, part in split_rows(rows, slot_map).items():
            piece(owner).sparse_gradients.append(part)
    if not pieces:
        piece(refused_by)
    out = []
    for owner in sorted(pieces):
        pieces[owner].part = parts(req.step)
        out.append((owner, pieces[owner]))
    return out


def split_pull(req: pb.PullParametersRequest, slot_map: SlotMap) -> List[Tuple[int, pb.PullParametersRequest]]:
    """[(owner, piece)] of a refused PullParametersRequest, by owner (ascending) under `slot_map`."""
    pieces: Dict[int, pb.PullParametersRequest] = {}

    def piece(owner: int) -> pb.PullParametersRequest:
        if owner not in pieces:
            p = pb.PullParametersRequest()
            p.CopyFrom(req)
            p.ClearField("blocks")
            p.ClearField("sparse_rows")
            pieces[owner] = p
        return pieces[owner]

    for b in req.blocks:
        piece(_owner(slot_map, b.name, b.block)).blocks.append(b)
    for ref in req.sparse_rows:
        by: Dict[int, List[int]] = {}
        for r in ref.row_ids:
            by.setdefault(slot_map.owner_of_row(ref.name, r), []).append(r)
        for owner in sorted(by):
            piece(owner).sparse_rows.add(name=ref.name, row_ids=by[owner])
    return [(o, pieces[o]) for o in sorted(pieces)]


def merge(answers: Sequence[R], response_type: Type[R], push: bool) -> R:
    """The answer the refused request would have had: the pieces' blocks and rows (in piece order),
    the highest step; a push is a duplicate only if every piece was one."""
    out = response_type()
    for a in answers:
        out.step = max(out.step, a.step)
        out.blocks.extend(a.blocks)
        out.sparse_rows.extend(a.sparse_rows)
    if isinstance(out, pb.PushGradientsResponse):
        out.duplicate = bool(answers) and all(a.duplicate for a in answers)
    return out
