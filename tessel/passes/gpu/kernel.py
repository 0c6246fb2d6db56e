"""The host/device split: a lowered PrimFunc as the GPU kernels it launches, in order.

A launch group is an outermost ``thread_binding`` loop nest: everything inside it is device
code. The thread_binding loops stay in the kernel's body where the lowering put them (nested
ones with the same tag too: a cooperative fetch binds a shared copy's loops to the consumer's
threads), so the CUDA generator and the simulator read one IR: each binds ``var = min + tag``
and a thread whose index is past the loop's extent skips its body. The launch extent of a tag
is the largest extent of its loops in the kernel.

The host side may only sequence kernels: ``produce`` markers, sequences, allocations of
global temporaries (which the runtime allocates on the device) and serial loops around launches
(a scan's steps: one launch per step, the loop's variable handed to the kernel as a scalar).
Work outside every bound loop would run on the host, which a GPU target has no code for; it is
refused with what to bind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...arith import Analyzer
from ...errors import GpuError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import collect, free_vars
from ...ir.names import identifier
from ...ir.stmt import BLOCK_TAGS, LAUNCH_TAGS, THREAD_TAGS, LoopKind

# per-dimension limits of a launch (the same on sm_80 and sm_90)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Kernel:
    """One launch: ``body`` is device code (see the module's note for its meaning); ``launch``
    gives each bound tag's extent as an expression over the host's sizes; ``params`` are the
    global buffers the body touches (the PrimFunc's parameters first, in their order, then the
    global temporaries the host allocates) and ``scalars`` the sizes and scalars it reads."""

    name: str
    params: tuple[S.Buffer, ...]
    scalars: tuple[E.Var, ...]
    launch: tuple[tuple[str, E.PrimExpr], ...]
    body: S.Stmt
    temporaries: tuple[S.Buffer, ...] = field(default=())

    def extent(self, tag: str) -> E.PrimExpr:
        for t, ext in self.launch:
            if t == tag:
                return ext
        return E.IntImm(1, "int32")

    @property
    def grid(self) -> tuple[E.PrimExpr, E.PrimExpr, E.PrimExpr]:
        return tuple(self.extent(t) for t in BLOCK_TAGS)  # type: ignore[return-value]

    @property
    def block(self) -> tuple[E.PrimExpr, E.PrimExpr, E.PrimExpr]:
        return tuple(self.extent(t) for t in THREAD_TAGS)  # type: ignore[return-value]

    def threads_per_block(self) -> int | None:
        """Threads in one block, None when a block extent is symbolic."""
        n = 1
        for e in self.block:
            if not isinstance(e, E.IntImm):
                return None
            n *= e.value
        return n

    def with_body(self, body: S.Stmt) -> Kernel:
        return Kernel(self.name, self.params, self.scalars, self.launch, body, self.temporaries)


def thread_loops(stmt: S.Stmt) -> list[S.For]:
    return collect(stmt, lambda n: isinstance(n, S.For) and n.kind == LoopKind.THREAD_BINDING)


def _launch_tag(tag: str) -> bool:
    return tag in LAUNCH_TAGS


def split_kernels(func: S.PrimFunc) -> list[Kernel]:
    """The kernels of ``func`` in launch order, each with its launch extents and parameters."""
    groups: list[tuple[S.For, tuple[E.Var, ...]]] = []
    temps: list[S.Buffer] = []
    _host(func.body, func, groups, temps)
    kernels = []
    for k, (loop, around) in enumerate(groups):
        name = identifier(f"{func.name}_kernel{k}", "c", frozenset(), ("tsl_",))
        kernels.append(_kernel(name, loop, func, temps, around))
    return kernels


def host_plan(func: S.PrimFunc) -> tuple:
    """The host's program as data, for a runtime that launches the kernels itself: a tuple of
    steps, each ``("launch", k)`` (the ``k``-th kernel of ``split_kernels``) or ``("loop", var,
    min, extent, steps)`` (a host loop: ``steps`` once per value of ``var``)."""
    count = [0]

    def walk(s: S.Stmt) -> list:
        if isinstance(s, S.SeqStmt):
            return [x for y in s.seq for x in walk(y)]
        if isinstance(s, S.AttrStmt | S.Allocate):
            return walk(s.body)
        if isinstance(s, S.For) and s.kind == LoopKind.THREAD_BINDING:
            count[0] += 1
            return [("launch", count[0] - 1)]
        if host_loop(s):
            return [("loop", s.loop_var, s.min, s.extent, tuple(walk(s.body)))]
        return []

    return tuple(walk(func.body))


def host_loop(s: S.Stmt) -> bool:
    """Whether ``s`` is a loop the host runs around launches (see the module's note)."""
    return (isinstance(s, S.For) and s.kind in (LoopKind.SERIAL, LoopKind.UNROLLED)
            and bool(collect(s.body, lambda n: isinstance(n, S.For) and n.kind == LoopKind.THREAD_BINDING,
                             statements_only=True)))


def _host(s: S.Stmt, func: S.PrimFunc, groups: list, temps: list[S.Buffer], around: tuple = ()) -> None:
    """Walk the host side: collect launch groups (each with the host loops around it); refuse
    anything the host would have to run."""
    if isinstance(s, S.SeqStmt):
        for x in s.seq:
            _host(x, func, groups, temps, around)
    elif isinstance(s, S.AttrStmt):
        _host(s.body, func, groups, temps, around)
    elif isinstance(s, S.Allocate) and s.buffer.scope in ("global", ""):
        temps.append(s.buffer)
        _host(s.body, func, groups, temps, around)
    elif host_loop(s):
        _host(s.body, func, groups, temps, (*around, s.loop_var))
    elif isinstance(s, S.For) and s.kind == LoopKind.THREAD_BINDING:
        if not _launch_tag(s.thread_tag):
            raise GpuError(f"kernel {func.name!r}: loop {s.loop_var.name!r} is bound to {s.thread_tag!r} outside any "
                           "blockIdx/threadIdx loop; a vthread or other tag must sit inside a launch "
                           "(bind an outer axis to blockIdx.x)")
        groups.append((s, around))
    elif isinstance(s, S.Evaluate) and isinstance(s.value, E.IntImm | E.FloatImm):
        return
    else:
        raise GpuError(_unbound_message(s, func))


def _unbound_message(s: S.Stmt, func: S.PrimFunc) -> str:
    stores = collect(s, lambda n: isinstance(n, S.BufferStore))
    what = f"stage {stores[0].buffer.name!r}" if stores else f"a {type(s).__name__}"
    loop = s.loop_var.name if isinstance(s, S.For) else None
    where = f" (its loop {loop!r} is a {s.kind} loop)" if loop else ""
    return (f"kernel {func.name!r}: {what} is computed outside every thread_binding loop{where}, so it would run "
            "on the host, which a GPU target has no code for; bind its outer axes to blockIdx.x / threadIdx.x "
            "(s[T].bind(axis, te.thread_axis('blockIdx.x'))), or compute it inside a bound loop (compute_at)")


def _kernel(name: str, loop: S.For, func: S.PrimFunc, temps: list[S.Buffer], around: tuple = ()) -> Kernel:
    launch = _launch_extents(loop, func.name)
    touched = {id(n.buffer) for n in collect(loop, lambda n: isinstance(n, S.BufferStore | E.BufferLoad))}
    touched |= {id(a.args[0].buffer) for a in collect(loop, lambda n: isinstance(n, E.Call) and n.op == "address_of")}
    params = tuple(b for b in (*func.params, *temps) if id(b) in touched)
    bound_inside = {id(n.loop_var) for n in collect(loop, lambda n: isinstance(n, S.For))}
    bound_inside |= {id(n.var) for n in collect(loop, lambda n: isinstance(n, S.LetStmt | E.Let))}
    used = {id(v) for v in free_vars(loop) if id(v) not in bound_inside}
    used |= {id(v) for _, ext in launch for v in free_vars(ext)}
    for b in params:
        used |= {id(v) for d in b.shape for v in free_vars(d)}
    scalars = tuple(v for v in (*func.size_vars, *around) if id(v) in used)
    used_temps = tuple(b for b in temps if id(b) in touched)
    return Kernel(name, params, scalars, launch, loop, used_temps)


def _launch_extents(root: S.For, fname: str) -> tuple[tuple[str, E.PrimExpr], ...]:
    """Each launch tag's extent: the provable maximum of its loops' extents in the kernel."""
    ana = Analyzer()
    found: dict[str, list[S.For]] = {}
    for loop in thread_loops(root):
        if _launch_tag(loop.thread_tag):
            found.setdefault(loop.thread_tag, []).append(loop)
    out = []
    for tag in LAUNCH_TAGS:
        loops = found.get(tag)
        if not loops:
            continue
        best = loops[0].extent
        for other in loops[1:]:
            if ana.can_prove(E.ge(best, other.extent)):
                continue
            if ana.can_prove(E.ge(other.extent, best)):
                best = other.extent
                continue
            raise GpuError(f"kernel {fname!r}: {tag} is bound to loops {loops[0].loop_var.name!r} (extent "
                           f"{loops[0].extent}) and {other.loop_var.name!r} (extent {other.extent}), and neither "
                           "extent is provably the larger, so the launch size is unknown; split both by the same "
                           "factor before binding")
        out.append((tag, best))
    return tuple(out)


def check_launch(kernel: Kernel) -> None:
    """Refuse a block that no GPU can launch (known at build time when the extents are constant)."""
    for tags, limits, what in ((THREAD_TAGS, MAX_BLOCK, "block"), (BLOCK_TAGS, MAX_GRID, "grid")):
        for tag, lim in zip(tags, limits):
            ext = kernel.extent(tag)
            if isinstance(ext, E.IntImm) and ext.value > lim:
                raise GpuError(f"kernel {kernel.name!r}: {tag} has extent {ext.value}, over the {what} limit "
                               f"{lim}; split that axis further before binding it")
    n = kernel.threads_per_block()
    if n is not None and n > MAX_THREADS_PER_BLOCK:
        raise GpuError(f"kernel {kernel.name!r}: {n} threads per block (block {[str(e) for e in kernel.block]}), over "
                       f"the limit of {MAX_THREADS_PER_BLOCK}; bind smaller inner splits to threadIdx")


__all__ = ["BLOCK_TAGS", "LAUNCH_TAGS", "THREAD_TAGS", "Kernel", "check_launch", "host_loop", "host_plan", "split_kernels",
           "thread_loops"]
