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

from ..errors import ArgumentError, DistributedError
from ..poly.distribute import Box
from ..schedule.schedule import Schedule
from ..te.operation import stage_order
from ..te.tensor import PlaceholderOp, Tensor
from .comm import Comm, world
from .local import local_program, local_schedule
from .plan import Plan, Split, Transfer, plan, reducer_kind, split_of


class DistArray:
    """One rank's part of a global array: ``local`` holds the global box ``box`` (its owned
    block, grown by ghost zones as calls need them; the whole array where it is replicated)."""

    def __init__(self, name: str, shape: tuple[int, ...], dtype: Any, split: Split, rank: int, ranks: int,
                 local: np.ndarray | None = None):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)
        self.split, self.rank, self.ranks = split, rank, ranks
        self.owned = split.block(rank, ranks)
        self.box = self.owned
        empty = (0,) * len(shape) if self.box is None else tuple(b - a for a, b in zip(self.box.lo, self.box.hi))
        self.local = np.zeros(empty, self.dtype) if local is None else local

    def view(self, box: Box) -> np.ndarray:
        """The part of ``local`` holding global box ``box`` (which must lie inside ``self.box``)."""
        assert self.box is not None
        return self.local[tuple(slice(a - o, b - o) for a, b, o in zip(box.lo, box.hi, self.box.lo))]

    def owned_view(self) -> np.ndarray:
        return self.view(self.owned) if self.owned is not None else np.zeros((0,) * len(self.shape), self.dtype)

    def ensure(self, box: Box) -> None:
        """Grow ``local`` to hold ``box`` too, keeping what it holds (ghost zones, once)."""
        if self.box is not None and all(a >= c and b <= d for a, b, c, d in zip(box.lo, box.hi, self.box.lo,
                                                                                  self.box.hi)):
            return
        old = self.box
        new = box if old is None else Box(tuple(map(min, box.lo, old.lo)), tuple(map(max, box.hi, old.hi)))
        grown = np.zeros(tuple(b - a for a, b in zip(new.lo, new.hi)), self.dtype)
        if old is not None:
            grown[tuple(slice(a - o, b - o) for a, b, o in zip(old.lo, old.hi, new.lo))] = self.local
        self.local, self.box = grown, new

    def __repr__(self) -> str:
        return f"<DistArray {self.name} {self.shape} rank {self.rank}/{self.ranks} holds {self.box}>"


class DistKernel:
    """The distributed form of a schedule on one rank (see the module docstring)."""

    def __init__(self, s: Schedule, args: list[Tensor], comm: Comm, target: str, multi_hop: bool,
                 deterministic: bool, overlap: bool, transfers: Callable[[Plan], list[Transfer]] | None = None,
                 placement: dict | None = None):
        self.schedule, self.args, self.comm = s, list(args), comm
        self.target, self.multi_hop, self.deterministic = target, multi_hop, deterministic
        self.overlap, self.transfers, self.placement = overlap, transfers, placement
        self._tags = {t.name: 10 + k for k, t in enumerate(self.args)}
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
        return split_of(self.schedule, t, shape, self.placement)

    def scatter(self, name: str, array: np.ndarray | None = None, root: int = 0) -> DistArray:
        """Rank ``root``'s global ``array`` for argument ``name``, as each rank's part."""
        t, c = self._tensor(name), self.comm
        meta = c.bcast(None if array is None else (array.shape, array.dtype.str), root)
        if meta is None:
            raise ArgumentError(f"scatter of {name}: rank {root} gave no array")
        shape, dtype = tuple(meta[0]), np.dtype(meta[1])
        out = DistArray(name, shape, dtype, self._split(t, shape), c.rank, c.size)
        if c.rank == root:
            handles = []
            for q in range(c.size):
                box = out.split.block(q, c.size)
                if box is None:
                    continue
                piece = np.ascontiguousarray(array[tuple(slice(a, b) for a, b in zip(box.lo, box.hi))])
                if q == root:
                    out.local[...] = piece
                else:
                    handles.append(c.send(piece, q, 1))
            c.wait_sends(handles)
        elif out.owned is not None:
            c.recv(out.local, root, 1, f"its block of {name} from rank {root}")
        return out

    def empty(self, name: str, shape: tuple[int, ...] | None = None, dtype: Any = None) -> DistArray:
        """A zero-filled part of a global array for argument ``name`` (an output, say)."""
        t = self._tensor(name)
        if shape is None:
            shape = tuple(int(e.value) for e in t.shape)
        out = DistArray(name, tuple(shape), dtype or t.dtype, self._split(t, tuple(shape)), self.comm.rank,
                        self.comm.size)
        return out

    def empty_like(self, a: DistArray, name: str | None = None) -> DistArray:
        """A zero-filled array laid out as ``a`` (for the other buffer of a time loop)."""
        out = DistArray(name or a.name, a.shape, a.dtype, a.split, a.rank, a.ranks)
        if a.box is not None:
            out.ensure(a.box)
        return out

    def gather(self, a: DistArray, root: int = 0) -> np.ndarray | None:
        """The global array on rank ``root`` (None elsewhere)."""
        if a.split.dim is None:
            return a.local.copy() if self.comm.rank == root else None
        parts = self.comm.gather((a.owned, a.owned_view().copy()), root)
        if parts is None:
            return None
        out = np.zeros(a.shape, a.dtype)
        for box, data in parts:
            if box is not None:
                out[tuple(slice(x, y) for x, y in zip(box.lo, box.hi))] = data
        return out

    # ---- the plan and the rank's kernel ------------------------------------------------------
    def plan(self, sizes: dict | None = None) -> Plan:
        """The plan for these sizes on this communicator's ranks (made once per sizes)."""
        key = tuple(sorted((v.name, n) for v, n in (sizes or {}).items()))
        if key not in self._plans:
            got = plan(self.schedule, self.args, self.comm.size, sizes or {}, multi_hop=self.multi_hop,
                       overlap=self.overlap, placement=self.placement)
            self._plans[key] = got if self.transfers is None else got.with_transfers(self.transfers(got))
        return self._plans[key]

    def _kernel(self, p: Plan, key: tuple, piece: dict | None):
        key = (key, repr(piece))
        if key not in self._kernels:
            from ..driver import build

            tensors = local_program(self.ops, p.part(self.comm.rank), p.sizes, piece)
            sch = local_schedule(self.schedule, tensors)
            self._kernels[key] = build(sch, [tensors[t.name] for t in self.args], target=self.target)
        return self._kernels[key]

    def __call__(self, *arrays: DistArray) -> None:
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
        by_name = {t.name: a for t, a in zip(self.args, arrays)}
        for t, a in zip(self.args, arrays):
            if a.split != p.splits[t.name]:
                raise ArgumentError(f"argument {t.name}: the array is laid out as {a.split}, the plan lays "
                                    f"{t.name} out as {p.splits[t.name]}; make it with kernel.scatter"
                                    f"({t.name!r}, ...) or kernel.empty({t.name!r})")
        key = tuple(sorted((v.name, n) for v, n in p.sizes.items()))
        part = p.part(self.comm.rank)
        t0 = time.perf_counter()
        handles = self._send(p, by_name)
        if self.overlap and (part.core or part.rim):
            # the core reads only what this rank owns (poly.distribute proves it): computed while
            # the messages travel; the rim once they are in
            name = next(iter(p.axes))
            self.stats["exchange_s"] += time.perf_counter() - t0
            for piece in part.core:
                self._compute(p, by_name, key, {name: piece})
            t0 = time.perf_counter()
            self._receive(p, by_name)
            self.comm.wait_sends(handles)
            self.stats["exchange_s"] += time.perf_counter() - t0
            for piece in part.rim:
                self._compute(p, by_name, key, {name: piece})
        else:
            self._receive(p, by_name)
            self.comm.wait_sends(handles)
            self.stats["exchange_s"] += time.perf_counter() - t0
            self._compute(p, by_name, key)
        self.stats["calls"] += 1

    def _send(self, p: Plan, arrays: dict[str, DistArray]) -> list:
        """Grow the ghost zones the plan needs, then post every send of this rank."""
        r, c = self.comm.rank, self.comm
        for name, a in arrays.items():
            box = p.part(r).storage.get(name)
            if box is not None:
                a.ensure(box)
        handles = []
        for m in p.sent(r):
            data = np.concatenate([arrays[m.tensor].view(b).ravel() for b in m.boxes])
            handles.append(c.send(data, m.dst, self._tags[m.tensor]))
            self.stats["bytes_sent"] += data.nbytes
        return handles

    def _receive(self, p: Plan, arrays: dict[str, DistArray]) -> None:
        """Every message of this rank, each into its ghost zone."""
        r, c = self.comm.rank, self.comm
        for m in p.received(r):
            a = arrays[m.tensor]
            buf = np.empty(m.count, a.dtype)
            c.recv(buf, m.src, self._tags[m.tensor], f"{', '.join(b.text(m.tensor) for b in m.boxes)} from rank {m.src}")
            at = 0
            for b in m.boxes:
                v = a.view(b)
                v[...] = buf[at:at + v.size].reshape(v.shape)
                at += v.size

    def _compute(self, p: Plan, arrays: dict[str, DistArray], key: tuple, piece: dict | None = None) -> None:
        """The rank's kernel (over ``piece``, one box of its block, if given), then Allreduce."""
        r = self.comm.rank
        part = p.part(r)
        outs = [t for t in self.args if not isinstance(t.op, PlaceholderOp)]
        runs = piece is not None or any(_has_block(p, part.instances.get(t.op.name), t.op.name) for t in outs)
        views, copies = [], []
        for t in self.args:
            a = arrays[t.name]
            if isinstance(t.op, PlaceholderOp):
                box = part.storage.get(t.name)
                views.append(np.ascontiguousarray(a.view(box)) if box is not None
                             else np.zeros((1,) * len(t.shape), a.dtype))
                continue
            inst = (piece or {}).get(t.op.name) or part.instances.get(t.op.name) or {}
            box = Box(tuple(inst.get(iv.var.name, (0, 1))[0] for iv in t.op.axis),
                      tuple(inst.get(iv.var.name, (0, 1))[1] for iv in t.op.axis))
            a.ensure(box if a.split.dim is not None else Box((0,) * len(a.shape), a.shape))
            if t.op.name in p.partial:
                tmp = np.full(a.shape, _identity(reducer_kind(t.op), a.dtype), a.dtype)
                views.append(tmp)
                copies.append((t, a, tmp, None))
                continue
            v = a.view(box)
            tmp = v if v.flags.c_contiguous else np.ascontiguousarray(v)
            views.append(tmp)
            if tmp is not v:
                copies.append((t, a, tmp, box))
        t0 = time.perf_counter()
        if runs:
            self._kernel(p, key, piece)(*views)
        t1 = time.perf_counter()
        self.stats["compute_s"] += t1 - t0
        for t, a, tmp, box in copies:
            if box is None:
                a.local[...] = self.comm.allreduce(tmp, reducer_kind(t.op), self.deterministic)
            else:
                a.view(box)[...] = tmp
        self.stats["allreduce_s"] += time.perf_counter() - t1


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
          placement: dict[str, int | None] | None = None) -> DistKernel:
    """This rank's kernel of the distributed schedule ``s`` over ``comm`` (default: ``world()``,
    MPI's world under ``mpirun``, else one rank). ``deterministic``: partial results are combined
    in rank order rather than by MPI's Allreduce, so the values do not depend on MPI's grouping.
    ``multi_hop``: accept halos wider than a neighbour's block. ``overlap``: compute the core of
    each rank's block (the instances whose reads need no message, proven on the sets) while the
    messages travel, then the rim (a program of one distributed stage without reduction).
    ``transfers``: the messages written by hand (a function of the derived plan, for its sizes
    and ranks), used instead of the derived ones once checked against them (``Plan.with_transfers``).
    ``placement``: where inputs live, declared (see ``plan``)."""
    if s.history is None:
        raise DistributedError("tessel.distributed.build needs a schedule that records its steps "
                               "(te.create_schedule makes one)")
    return DistKernel(s, args, comm or world(), target, multi_hop, deterministic, overlap, transfers, placement)
