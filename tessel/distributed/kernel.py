"""Running a distributed schedule: per-rank arrays, halo exchange, the rank's kernel, Allreduce.

SPMD: every rank runs the same script; ``build`` gives each a :class:`DistKernel`. A call
exchanges exactly the plan's messages for its inputs (all sends posted, then the receives,
each polled against a deadline), calls the rank's ordinary tessel kernel on its boxes, then
combines partial results (a reduction over a distributed axis) with an Allreduce. A time loop
is a Python loop of calls: one exchange per step, as the recurrence needs. The plan is made
per set of sizes, from the global shapes the arrays carry, and kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ArgumentError, DistributedError, DistributionError
from ..poly.distribute import Box
from ..schedule.schedule import Schedule
from ..te.operation import stage_order
from ..te.tensor import PlaceholderOp, Tensor
from .comm import _REDUCE, Comm, world
from .local import local_program, local_schedule
from .plan import Plan, Split, Transfer, plan, reducer_kind, split_of


class Segment:
    """One part of a global array on its rank: ``local`` holds the global box ``box`` (the
    part's owned block, grown by ghost zones as calls need them; the whole array for a copy)."""

    def __init__(self, owned: Box | None, dtype: np.dtype, box: Box | None = None):
        self.owned, self.box = owned, box or owned
        assert self.box is not None
        self.local = np.zeros(tuple(b - a for a, b in zip(self.box.lo, self.box.hi)), dtype)

    def view(self, box: Box) -> np.ndarray:
        """The part of ``local`` holding global box ``box`` (which must lie inside ``self.box``)."""
        return self.local[tuple(slice(a - o, b - o) for a, b, o in zip(box.lo, box.hi, self.box.lo))]

    def ensure(self, box: Box) -> None:
        """Grow ``local`` to hold ``box`` too, keeping what it holds (ghost zones, once)."""
        old = self.box
        if all(a >= c and b <= d for a, b, c, d in zip(box.lo, box.hi, old.lo, old.hi)):
            return
        new = Box(tuple(map(min, box.lo, old.lo)), tuple(map(max, box.hi, old.hi)))
        grown = np.zeros(tuple(b - a for a, b in zip(new.lo, new.hi)), self.local.dtype)
        grown[tuple(slice(a - o, b - o) for a, b, o in zip(old.lo, old.hi, new.lo))] = self.local
        self.local, self.box = grown, new


class DistArray:
    """One rank's share of a global array: a :class:`Segment` per part it holds (one block; the
    blocks dealt to it when block-cyclic; the whole array, part None, for a copy on every rank)."""

    def __init__(self, name: str, shape: tuple[int, ...], dtype: Any, split: Split, rank: int):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)
        self.split, self.rank = split, rank
        self.segments: dict[int | None, Segment] = {}
        for k in split.parts_of(rank):
            box = split.box(k)
            if box is not None:
                self.segments[k] = Segment(box, self.dtype)

    def segment(self, part: int | None) -> Segment:
        return self.segments[None] if self.split.copied else self.segments[part]

    def view(self, part: int | None, box: Box) -> np.ndarray:
        return self.segment(part).view(box)

    def ensure(self, part: int | None, box: Box) -> None:
        """Part ``part`` holds ``box`` (ghost zones grown; a part that owns none of the array
        but reads some of it gets a segment of ghosts only)."""
        if not self.split.copied and part not in self.segments:
            self.segments[part] = Segment(None, self.dtype, box)
        self.segment(part).ensure(box)

    @property
    def local(self) -> np.ndarray:
        """The values of a rank's only segment (a copy on every rank, or one block)."""
        (seg,) = self.segments.values()
        return seg.local

    def __repr__(self) -> str:
        held = ", ".join(f"{k}: {seg.box}" for k, seg in self.segments.items())
        return f"<DistArray {self.name} {self.shape} rank {self.rank} of {self.split.ranks}, parts {{{held}}}>"


class DistKernel:
    """The distributed form of a schedule on one rank (see the module docstring)."""

    def __init__(self, s: Schedule, args: list[Tensor], comm: Comm, target: str, multi_hop: bool,
                 deterministic: bool, overlap: bool, transfers: Callable[[Plan], list[Transfer]] | None = None,
                 placement: dict | None = None, grid: tuple[int, int] | None = None):
        self.schedule, self.args, self.comm, self.grid = s, list(args), comm, grid
        self.target, self.multi_hop, self.deterministic = target, multi_hop, deterministic
        self.overlap, self.transfers, self.placement = overlap, transfers, placement
        self._tags = {t.name: 10 + k for k, t in enumerate(self.args)}
        #: the user's barriers (``s.barrier(after=...)``) and declared transfers (``s.transfer``)
        self.barriers = {m[1] for m in s.messaging if m[0] == "barrier"}
        self.declared = [Transfer(m[1], m[2], m[3], (Box(m[4], m[5]),)) for m in s.messaging if m[0] == "transfer"]
        if self.declared and transfers is not None:
            raise DistributionError("the schedule declares transfers (s.transfer) and build was given transfers=: "
                                    "declare them one way")
        self.ops = stage_order(list(s.history.origin.outputs))
        self._plans: dict[tuple, Plan] = {}
        self._kernels: dict[tuple, Any] = {}
        #: seconds in the halo exchange, the rank's kernel and the Allreduce, calls and bytes sent
        self.stats = {"exchange_s": 0.0, "compute_s": 0.0, "allreduce_s": 0.0, "calls": 0, "bytes_sent": 0}

    # ---- arrays ----------------------------------------------------------------------------
    def _tensor(self, name: str) -> Tensor:
        t = next((t for t in self.args if t.name == name), None)
        if t is None:
            raise ArgumentError(f"distributed kernel: no argument named {name!r} (its arguments: "
                                f"{', '.join(a.name for a in self.args)})")
        return t

    def _split(self, t: Tensor, shape: tuple[int, ...]) -> Split:
        return split_of(self.schedule, t, shape, self.comm.size, self.placement, self.grid)

    def scatter(self, name: str, array: np.ndarray | None = None, root: int = 0) -> DistArray:
        """Rank ``root``'s global ``array`` for argument ``name``, as each rank's part."""
        t, c = self._tensor(name), self.comm
        meta = c.bcast(None if array is None else (array.shape, array.dtype.str), root)
        if meta is None:
            raise ArgumentError(f"scatter of {name}: rank {root} gave no array")
        shape, dtype = tuple(meta[0]), np.dtype(meta[1])
        out = DistArray(name, shape, dtype, self._split(t, shape), c.rank)
        split = out.split
        if c.rank == root:
            assert array is not None
            handles = []
            targets = ([(k, k % c.size) for k in range(split.parts)] if not split.copied
                       else [(None, q) for q in range(c.size)])
            for k, q in targets:
                box = split.box(k)
                if box is None:
                    continue
                piece = np.ascontiguousarray(array[tuple(slice(a, b) for a, b in zip(box.lo, box.hi))])
                if q == root:
                    out.segment(k).local[...] = piece
                else:
                    handles.append(c.send(piece, q, 1))
            c.wait_sends(handles)
        else:
            for k, seg in out.segments.items():
                c.recv(seg.local, root, 1, f"its part {'' if k is None else k} of {name} from rank {root}")
        return out

    def empty(self, name: str, shape: tuple[int, ...] | None = None, dtype: Any = None) -> DistArray:
        """A zero-filled part of a global array for argument ``name`` (an output, say)."""
        t = self._tensor(name)
        if shape is None:
            if not all(hasattr(e, "value") for e in t.shape):
                raise ArgumentError(f"empty({name!r}): {name}'s shape {tuple(t.shape)} has symbolic sizes; give "
                                    f"the global shape, empty({name!r}, shape=(...)), or use empty_like")
            shape = tuple(int(e.value) for e in t.shape)
        return DistArray(name, tuple(shape), dtype or t.dtype, self._split(t, tuple(shape)), self.comm.rank)

    def fill(self, name: str, shape: tuple[int, ...], part_of: Callable[[tuple[slice, ...]], np.ndarray],
             dtype: Any = None) -> DistArray:
        """Each rank's part made where it lives, without a global array: ``part_of(index)``
        gives the values of the global array at ``index`` (a tuple of slices), for each block
        the rank owns (``lambda ix: np.fromfile(...)[ix]``, a formula of the indices ...)."""
        out = self.empty(name, tuple(shape), dtype)
        for seg in out.segments.values():
            if seg.owned is not None:
                seg.view(seg.owned)[...] = part_of(tuple(slice(a, b) for a, b in zip(seg.owned.lo, seg.owned.hi)))
        return out

    def empty_like(self, a: DistArray, name: str | None = None) -> DistArray:
        """A zero-filled array laid out as ``a`` (for the other buffer of a time loop)."""
        out = DistArray(name or a.name, a.shape, a.dtype, a.split, a.rank)
        for k, seg in a.segments.items():
            out.ensure(k, seg.box)
        return out

    def gather(self, a: DistArray, root: int = 0) -> np.ndarray | None:
        """The global array on rank ``root`` (None elsewhere)."""
        if a.split.copied:
            return a.local.copy() if self.comm.rank == root else None
        mine = [(seg.owned, seg.view(seg.owned).copy()) for seg in a.segments.values() if seg.owned is not None]
        parts = self.comm.gather(mine, root)
        if parts is None:
            return None
        out = np.zeros(a.shape, a.dtype)
        for box, data in (x for got in parts for x in got):
            out[tuple(slice(lo, hi) for lo, hi in zip(box.lo, box.hi))] = data
        return out

    # ---- the plan and the rank's kernels -----------------------------------------------------
    def plan(self, sizes: dict | None = None) -> Plan:
        """The plan for these sizes on this communicator's ranks (made once per sizes)."""
        key = tuple(sorted((v.name, n) for v, n in (sizes or {}).items()))
        if key not in self._plans:
            got = plan(self.schedule, self.args, self.comm.size, sizes or {}, multi_hop=self.multi_hop,
                       overlap=self.overlap, placement=self.placement, grid=self.grid)
            given = self.transfers(got) if self.transfers is not None else self.declared or None
            self._plans[key] = got if given is None else got.with_transfers(given)
        return self._plans[key]

    def _kernel(self, p: Plan, key: tuple, k: int, piece: dict | None):
        key = (key, k, repr(piece))
        if key not in self._kernels:
            from ..driver import build

            tensors = local_program(self.ops, p.part(k), p.sizes, piece)
            sch = local_schedule(self.schedule, tensors)
            self._kernels[key] = build(sch, [tensors[t.name] for t in self.args], target=self.target)
        return self._kernels[key]

    def _checked(self, arrays: tuple) -> tuple[Plan, dict[str, DistArray]]:
        if len(arrays) != len(self.args):
            raise ArgumentError(f"distributed kernel takes {len(self.args)} arrays "
                                f"({', '.join(t.name for t in self.args)}), got {len(arrays)}")
        sizes = {}
        for t, a in zip(self.args, arrays):
            if not isinstance(a, DistArray):
                raise ArgumentError(f"argument {t.name}: a distributed kernel takes DistArrays "
                                    "(kernel.scatter / kernel.empty), got " + type(a).__name__)
            for e, n in zip(t.shape, a.shape):
                if hasattr(e, "name") and not hasattr(e, "value"):
                    sizes[e] = n
        p = self.plan(sizes)
        for t, a in zip(self.args, arrays):
            if a.split != p.splits[t.name]:
                raise ArgumentError(f"argument {t.name}: the array is laid out as {a.split}, the plan lays "
                                    f"{t.name} out as {p.splits[t.name]}; make it with kernel.scatter"
                                    f"({t.name!r}, ...) or kernel.empty({t.name!r})")
        return p, {t.name: a for t, a in zip(self.args, arrays)}

    def __call__(self, *arrays: DistArray) -> None:
        p, by_name = self._checked(arrays)
        self.run(p, by_name)

    def run(self, p: Plan, by_name: dict[str, DistArray]) -> None:
        """One call with arrays already checked against plan ``p`` (``__call__`` checks them;
        a caller that calls again with arrays of the same layouts, such as the step loop of a
        distributed recurrence, skips the checks)."""
        key = tuple(sorted((v.name, n) for v, n in p.sizes.items()))
        mine = list(range(self.comm.rank, len(p.data.parts), self.comm.size))
        partials: dict[str, np.ndarray] = {}
        t0 = time.perf_counter()
        handles, local = self._send(p, by_name, mine)
        split = [k for k in mine if p.part(k).core or p.part(k).rim] if self.overlap else []
        if split:
            # the core reads only what its part owns (poly.distribute proves it): computed while
            # the messages travel; the rim once they are in
            name = next(iter(p.axes))
            self.stats["exchange_s"] += time.perf_counter() - t0
            for k in split:
                for piece in p.part(k).core:
                    self._run(p, by_name, key, k, partials, {name: piece})
            t0 = time.perf_counter()
        self._receive(p, by_name, local)
        self.comm.wait_sends(handles)
        if "exchange" in self.barriers:
            self.comm.barrier()
        self.stats["exchange_s"] += time.perf_counter() - t0
        for k in mine:
            for piece in p.part(k).rim if k in split else [None]:
                self._run(p, by_name, key, k, partials, None if piece is None else {name: piece})
        self._combine(p, by_name, partials)
        if "compute" in self.barriers:
            self.comm.barrier()
        self.stats["calls"] += 1

    def _send(self, p: Plan, arrays: dict[str, DistArray], mine: list[int]) -> tuple[list, dict]:
        """Grow the ghost zones the plan needs, then post every send of this rank's parts (the
        messages between two parts of this rank are kept, to be copied)."""
        r, c = self.comm.rank, self.comm
        for k in mine:
            for name, box in p.part(k).storage.items():
                if box is not None and name in arrays:
                    arrays[name].ensure(k, box)
        handles, local = [], {}
        for m in p.messages:
            if m.src % c.size != r:
                continue
            data = np.concatenate([arrays[m.tensor].view(m.src, b).ravel() for b in m.boxes])
            if m.dst % c.size == r:
                local[id(m)] = data
                continue
            handles.append(c.send(data, m.dst % c.size, self._tags[m.tensor]))
            self.stats["bytes_sent"] += data.nbytes
        return handles, local

    def _receive(self, p: Plan, arrays: dict[str, DistArray], local: dict) -> None:
        """Every message to this rank's parts, each into its ghost zone, in the plan's order
        (the order the senders posted them in, which MPI keeps between two ranks)."""
        r, c = self.comm.rank, self.comm
        for m in p.messages:
            if m.dst % c.size != r:
                continue
            a = arrays[m.tensor]
            buf = local.get(id(m))
            if buf is None:
                buf = np.empty(m.count, a.dtype)
                c.recv(buf, m.src % c.size, self._tags[m.tensor], m.explain().split(" because ")[0])
            at = 0
            for b in m.boxes:
                v = a.view(m.dst, b)
                v[...] = buf[at:at + v.size].reshape(v.shape)
                at += v.size

    def _run(self, p: Plan, arrays: dict[str, DistArray], key: tuple, k: int, partials: dict,
             piece: dict | None = None) -> None:
        """Part ``k``'s kernel (over ``piece``, one box of its block, if given); a partial result
        (a reduction over the distributed axis) is folded into ``partials``."""
        part = p.part(k)
        outs = [t for t in self.args if not isinstance(t.op, PlaceholderOp)]
        if piece is None and not any(_has_block(p, part.instances.get(t.op.name), t.op.name) for t in outs):
            return
        views, after = [], []
        for t in self.args:
            a = arrays[t.name]
            if isinstance(t.op, PlaceholderOp):
                box = part.storage.get(t.name)
                views.append(np.ascontiguousarray(a.view(k, box)) if box is not None
                             else np.zeros((1,) * len(t.shape), a.dtype))
                continue
            inst = (piece or {}).get(t.op.name) or part.instances.get(t.op.name) or {}
            box = Box(tuple(inst.get(iv.var.name, (0, 1))[0] for iv in t.op.axis),
                      tuple(inst.get(iv.var.name, (0, 1))[1] for iv in t.op.axis))
            if t.op.name in p.partial:
                tmp = np.full(a.shape, _identity(reducer_kind(t.op), a.dtype), a.dtype)
                views.append(tmp)
                after.append((t, None, tmp))
                continue
            a.ensure(k, box)
            v = a.view(k, box)
            tmp = v if v.flags.c_contiguous else np.ascontiguousarray(v)
            views.append(tmp)
            if tmp is not v:
                after.append((t, v, tmp))
        t0 = time.perf_counter()
        self._kernel(p, key, k, piece)(*views)
        self.stats["compute_s"] += time.perf_counter() - t0
        for t, v, tmp in after:
            if v is not None:
                v[...] = tmp
            elif t.name in partials:
                _REDUCE[reducer_kind(t.op)](partials[t.name], tmp, out=partials[t.name])
            else:
                partials[t.name] = tmp

    def _combine(self, p: Plan, arrays: dict[str, DistArray], partials: dict[str, np.ndarray]) -> None:
        """Every rank's partial results of each reduction over the distributed axis, combined."""
        t0 = time.perf_counter()
        for t in self.args:
            if isinstance(t.op, PlaceholderOp) or t.op.name not in p.partial:
                continue
            a, kind = arrays[t.name], reducer_kind(t.op)
            mine = partials.get(t.name)
            if mine is None:  # no share of the axis here: the reducer's identity
                mine = np.full(a.shape, _identity(kind, a.dtype), a.dtype)
            a.local[...] = self.comm.allreduce(mine, kind, self.deterministic)
        self.stats["allreduce_s"] += time.perf_counter() - t0


def _has_block(p: Plan, inst: dict | None, name: str) -> bool:
    """Whether the rank runs some of stage ``name``: instances, and a part of its distributed
    axis (a reduction's init alone, on a rank with no share of the reduce axis, is not work)."""
    return inst is not None and (name not in p.axes or p.axes[name][0] in inst)


def _identity(kind: str | None, dtype: np.dtype):
    if kind == "sum":
        return 0
    big = np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max
    return -big if kind == "max" else big


def build(s: Schedule, args: list[Tensor], comm: Comm | None = None, target: str = "c", *,
          multi_hop: bool = False, deterministic: bool = False, overlap: bool = False,
          transfers: Callable[[Plan], list[Transfer]] | None = None,
          placement: dict[str, int | None] | None = None, grid: tuple[int, int] | None = None) -> DistKernel:
    """This rank's kernel of the distributed schedule ``s`` over ``comm`` (default: ``world()``,
    MPI's world under ``mpirun``, else one rank). ``deterministic``: partial results are combined
    in rank order rather than by MPI's Allreduce, so the values do not depend on MPI's grouping.
    ``multi_hop``: accept halos wider than a neighbour's block. ``overlap``: compute the core of
    each rank's block (the instances whose reads need no message, proven on the sets) while the
    messages travel, then the rim (a program of one distributed stage without reduction).
    ``transfers``: the messages written by hand (a function of the derived plan, for its sizes
    and ranks), used instead of the derived ones once checked against them (``Plan.with_transfers``).
    ``placement``: where inputs live, declared (see ``plan``). ``grid``: (rows, columns) of ranks
    when two axes are distributed (default: the closest to a square, ``plan.grid_shape``)."""
    if s.history is None:
        raise DistributedError("tessel.distributed.build needs a schedule that records its steps "
                               "(te.create_schedule makes one)")
    return DistKernel(s, args, comm or world(), target, multi_hop, deterministic, overlap, transfers, placement,
                      grid)
