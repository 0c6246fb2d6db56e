"""GPU kernels as CPU loops: the fast simulator of the ``cuda-sim`` target.

The device IR (``device_pipeline``'s kernels, the very code the CUDA target compiles) means:
every statement runs on every thread of every block; a loop bound to a launch tag is
``var = min + index`` (skipped by threads past its extent); a barrier
(``tvm_storage_sync``) waits for every thread of the block. CPU back ends for CUDA (MCUDA,
CuPBoP, POCL's work-item loops) run such a kernel as a loop over its blocks, and inside a
block, each stretch of code between two barriers as a loop over the block's threads: the
barrier is then where one thread loop ends and the next begins. Here that loop nest is tessel
IR, which the C generator compiles like any other kernel, blocks in parallel on OpenMP threads.

A warp shuffle (``tvm_warp_shuffle``, ``_down``, ``_up``: the lanes of a warp read each other's
values, which is how a cross-thread reduction sums) is a barrier too: the statement holding it
becomes two thread loops, the first storing each thread's operand in a per-block array, the
second reading the source lane's from it (lanes are linear thread ids modulo 32, a source
outside the lane's segment of ``width`` lanes is the lane itself, as CUDA's).

What crosses a barrier must live outside the thread loops: a thread's own temporary (scope
``local``) whose life spans a barrier becomes one array of them per block, indexed by the
thread; a ``let`` of a thread's value is recomputed where it is used (only values with no
loads, which a barrier cannot change). Control flow around a barrier must be the same for every
thread of a block (uniform), as CUDA requires. Kernels outside these rules -- a barrier or a
shuffle under a thread-dependent condition, a shuffle in a ``let``, a thread's loaded value
live across a barrier -- are refused with :class:`NotSerial`, and the target runs them on the
checking simulator instead, which also catches races and divergent barriers.
"""

from __future__ import annotations

from ...errors import BuildError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import Mutator, collect, free_vars, substitute
from ...ir.stmt import BLOCK_TAGS, THREAD_TAGS, LoopKind
from .kernel import Kernel, host_loop

BARRIER = "tvm_storage_sync"
#: the shuffles, by the source lane each reads: 0 a lane of the segment, 1 lanes down, 2 lanes up
SHUFFLES = {"tvm_warp_shuffle": 0, "tvm_warp_shuffle_down": 1, "tvm_warp_shuffle_up": 2}
ACTIVEMASK = "tvm_warp_activemask"
WARP = 32


class NotSerial(BuildError):
    """A kernel the fast simulator cannot run as loops (the reason says why)."""


def as_cpu(func: S.PrimFunc, kernels: list[Kernel]) -> S.PrimFunc:
    """``func`` with each launch replaced by its kernel (``kernels``, in launch order) as CPU
    loops: the whole program as one function for the C generator."""
    todo = list(kernels)

    def host(s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.seq(*[host(x) for x in s.seq])
        if isinstance(s, S.AttrStmt):
            return S.AttrStmt(s.node, s.key, s.value, host(s.body))
        if isinstance(s, S.Allocate):
            return S.Allocate(s.buffer, host(s.body))
        if isinstance(s, S.For) and s.kind == LoopKind.THREAD_BINDING:
            return serial_kernel(todo.pop(0))
        if host_loop(s):  # a loop of the host around launches (a scan's steps)
            return S.For(s.loop_var, s.min, s.extent, s.kind, host(s.body))
        return s

    body = host(func.body)
    if todo:
        raise NotSerial(f"kernel {func.name!r}: {len(todo)} launch(es) not found on the host side")
    return func.with_body(body)


def serial_kernel(kernel: Kernel) -> S.Stmt:
    """``kernel`` as loops: its blocks in parallel, each block's threads in turn between barriers."""
    index = {tag: E.Var(tag.replace(".", "_"), "int32") for tag in (*BLOCK_TAGS, *THREAD_TAGS)}
    extent = {tag: E.cast(kernel.extent(tag), "int32") for tag in (*BLOCK_TAGS, *THREAD_TAGS)}
    host = {id(v) for v in kernel.scalars}
    for tag, ext in extent.items():
        if any(id(v) not in host for v in free_vars(ext)):
            raise NotSerial(f"kernel {kernel.name!r}: the extent of {tag} ({ext}) is known only inside the kernel")
    # a thread's variable is its index wherever it is read, inside its loop or not (TVM's
    # meaning: the init of a cross-thread reduction tests threadIdx.x == 0 outside its loop)
    bound = collect(kernel.body, lambda n: isinstance(n, S.For) and n.kind == LoopKind.THREAD_BINDING
                    and n.thread_tag in index)
    body = _Replaced({}).visit(kernel.body)  # the active mask: every lane takes part
    body = substitute(body, {x.loop_var: E.add(E.cast(x.min, x.loop_var.dtype),
                                                       E.cast(index[x.thread_tag], x.loop_var.dtype)) for x in bound})
    body = _Bound(index, extent).visit(body)
    threads = [(index[t], extent[t]) for t in reversed(THREAD_TAGS)]  # z outermost, x innermost
    tid = E.add(E.mul(E.add(E.mul(index["threadIdx.z"], extent["threadIdx.y"]), index["threadIdx.y"]),
                      extent["threadIdx.x"]), index["threadIdx.x"])
    count = E.mul(E.mul(extent["threadIdx.x"], extent["threadIdx.y"]), extent["threadIdx.z"])
    varying = {id(index[t]) for t in THREAD_TAGS}
    block = _Threads(threads, tid, count, varying, kernel.name).wrap(body)
    # the blocks: one parallel loop over all of them, each block's indices from its number
    nbx, nby, nbz = (extent[t] for t in BLOCK_TAGS)
    b = E.Var("block", "int32")
    lets = [(index["blockIdx.x"], E.floormod(b, nbx)),
            (index["blockIdx.y"], E.floormod(E.floordiv(b, nbx), nby)),
            (index["blockIdx.z"], E.floordiv(b, E.mul(nbx, nby)))]
    for var, value in reversed(lets):
        block = S.LetStmt(var, value, block)
    return S.For(b, 0, E.mul(E.mul(nbx, nby), nbz), LoopKind.PARALLEL, block)


class _Bound(Mutator):
    """Each loop bound to a launch tag as what it means for one thread: its variable is
    ``min + index``, and a thread past its extent skips its body."""

    statements_only = True

    def __init__(self, index: dict[str, E.Var], extent: dict[str, E.PrimExpr]):
        self.index, self.extent = index, extent

    def visit_For(self, s: S.For) -> S.Stmt:
        body = self.visit(s.body)
        if s.kind != LoopKind.THREAD_BINDING:
            return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)
        if s.thread_tag not in self.index:  # a virtual thread left by the pipeline: a loop of each thread
            return S.For(s.loop_var, s.min, s.extent, LoopKind.SERIAL, body)
        idx = self.index[s.thread_tag]
        out = body  # its variable is already its index (serial_kernel)
        full = self.extent[s.thread_tag]
        if not (isinstance(full, E.IntImm) and isinstance(s.extent, E.IntImm) and full.value <= s.extent.value):
            out = S.IfThenElse(E.lt(idx, E.cast(s.extent, "int32")), out)
        return out


def _is_barrier(s: S.Stmt) -> bool:
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == BARRIER


def _is_shuffle(n) -> bool:
    return isinstance(n, E.Call) and n.op in SHUFFLES


def _has_barrier(s: S.Stmt) -> bool:
    """Whether ``s`` holds a point every thread of the block waits at: a barrier or a shuffle."""
    return bool(collect(s, _is_barrier, statements_only=True)) or bool(collect(s, _is_shuffle))


class _Threads:
    """A block's body with a loop over its threads around each stretch between barriers."""

    def __init__(self, threads: list[tuple[E.Var, E.PrimExpr]], tid: E.PrimExpr, count: E.PrimExpr,
                 varying: set[int], name: str):
        self.threads, self.tid, self.count, self.varying, self.name = threads, tid, count, varying, name
        self.guards: list[E.PrimExpr] = []  # conditions each thread tests inside the loops (warp-uniform ones)
        x_var, x_ext = threads[-1]
        # a condition free of threadIdx.x is the same for the 32 lanes of a warp when a row of the
        # block is whole warps: shuffles under it are exchanged by all of a warp's lanes or none
        self.lane_var = x_var if isinstance(x_ext, E.IntImm) and x_ext.value % WARP == 0 else None

    def loops(self, s: S.Stmt) -> S.Stmt:
        if self.guards:
            s = S.IfThenElse(E.all_(*self.guards) if len(self.guards) > 1 else self.guards[0], s)
        for var, ext in reversed(self.threads):  # x innermost: consecutive threads touch consecutive data
            s = S.For(var, 0, ext, LoopKind.SERIAL, s)
        return s

    def uniform(self, *exprs: object) -> bool:
        return not any(id(v) in self.varying for e in exprs for v in free_vars(e))

    def refuse(self, what: str) -> NotSerial:
        return NotSerial(f"kernel {self.name!r}: {what} around a barrier differs from thread to thread")

    def wrap(self, s: S.Stmt) -> S.Stmt:
        if not _has_barrier(s):
            return self.loops(s)
        if _is_barrier(s):
            return S.Evaluate(0)
        if isinstance(s, S.SeqStmt):
            out, run = [], []
            for x in s.seq:
                if _has_barrier(x):
                    if run:
                        out.append(self.loops(S.seq(*run)))
                        run = []
                    out.append(self.wrap(x))
                else:
                    run.append(x)
            if run:
                out.append(self.loops(S.seq(*run)))
            return S.seq(*out)
        if isinstance(s, S.For):
            if not self.uniform(s.min, s.extent):
                raise self.refuse(f"the loop over {s.loop_var.name}")
            kind = LoopKind.SERIAL if s.kind == LoopKind.PARALLEL else s.kind
            return S.For(s.loop_var, s.min, s.extent, kind, self.wrap(s.body), s.thread_tag)
        if isinstance(s, S.IfThenElse):
            if not self.uniform(s.condition):
                return self.guarded(s)
            return S.IfThenElse(s.condition, self.wrap(s.then_case),
                                self.wrap(s.else_case) if s.else_case is not None else None)
        if isinstance(s, S.LetStmt):
            if self.uniform(s.value):
                return type(s)(s.var, s.value, self.wrap(s.body))
            if collect(s.value, lambda n: isinstance(n, E.BufferLoad | E.Call)):
                raise NotSerial(f"kernel {self.name!r}: {s.var.name}, a value each thread loads, is live across a "
                                "barrier")
            return self.wrap(substitute(s.body, {s.var: s.value}))
        if isinstance(s, S.AttrStmt):
            return S.AttrStmt(s.node, s.key, s.value, self.wrap(s.body))
        if isinstance(s, S.Allocate):
            if s.buffer.scope in ("shared", "global", ""):  # the block's own: one per block
                return S.Allocate(s.buffer, self.wrap(s.body))
            return self.per_thread(s)
        if isinstance(s, S.BufferStore | S.Evaluate):
            return self.exchange(s)
        raise NotSerial(f"kernel {self.name!r}: a {type(s).__name__} around a barrier")

    def guarded(self, s: S.IfThenElse) -> S.Stmt:
        """A thread's own condition around shuffles (no barrier): tested by each thread inside
        every loop its branches become, when the lanes of a warp agree on it (a row of a block
        past the tensor's end: every lane of its warps skips)."""
        cond = s.condition
        barrier = bool(collect(s, _is_barrier, statements_only=True))
        lane_free = self.lane_var is not None and all(v is not self.lane_var for v in free_vars(cond))
        if barrier or not lane_free:
            raise self.refuse("a condition")
        parts = []
        for branch, test in ((s.then_case, cond), (s.else_case, E.logical_not(cond))):
            if branch is None:
                continue
            self.guards.append(test)
            try:
                parts.append(self.wrap(branch))
            finally:
                self.guards.pop()
        return S.seq(*parts)

    def exchange(self, s: S.Stmt) -> S.Stmt:
        """A statement holding warp shuffles: each thread's operands stored side by side, then
        the statement with each shuffle reading its source lane's."""
        calls = collect(s, _is_shuffle)
        if any(collect(c.args[1], _is_shuffle) for c in calls):
            raise NotSerial(f"kernel {self.name!r}: a shuffle of a shuffle's value")
        stores, sub, bufs = [], {}, []
        for k, c in enumerate(calls):
            _, value, arg, width, _ = c.args
            if not (isinstance(width, E.IntImm) and self.uniform(arg)):
                raise self.refuse("a shuffle's source lane")
            buf = S.Buffer(f"shfl{k}", value.dtype, (self.count,), "local")
            bufs.append(buf)
            stores.append(S.BufferStore(buf, value, [self.tid]))
            sub[id(c)] = E.BufferLoad(buf, [_source(self.tid, SHUFFLES[c.op], arg, width.value)])
        out = S.seq(self.loops(S.seq(*stores)), self.loops(_Replaced(sub).visit(s)))
        for buf in reversed(bufs):
            out = S.Allocate(buf, out)
        return out

    def per_thread(self, s: S.Allocate) -> S.Stmt:
        """A thread's temporary whose life spans a barrier: one per thread, side by side."""
        old = s.buffer
        size: E.PrimExpr = E.IntImm(1, "int32")
        for d in old.shape:  # flat accesses over the whole shape
            size = E.mul(size, E.cast(d, "int32"))
        new = S.Buffer(old.name, old.dtype, (E.mul(self.count, E.cast(size, "int32")),), "local")
        base = E.mul(self.tid, E.cast(size, "int32"))
        return S.Allocate(new, self.wrap(_Moved(old, new, base).visit(s.body)))


def _source(tid: E.PrimExpr, kind: int, arg: E.PrimExpr, width: int) -> E.PrimExpr:
    """The thread whose value a shuffle of ``kind`` reads in thread ``tid`` (see the module)."""
    lane = E.floormod(tid, WARP)
    pos = E.floormod(lane, width)
    base = E.sub(tid, pos)
    arg = E.cast(arg, "int32")
    if kind == 0:
        return E.add(base, E.floormod(arg, width))
    src = E.add(pos, arg) if kind == 1 else E.sub(pos, arg)
    inside = E.logical_and(E.ge(src, 0), E.lt(src, width))
    return E.select(inside, E.add(base, src), tid)


class _Replaced(Mutator):
    """Each call in ``sub`` (by identity) replaced by its value; the active mask is every lane."""

    def __init__(self, sub: dict[int, E.PrimExpr]):
        self.sub = sub

    def visit_Call(self, e: E.Call):
        if id(e) in self.sub:
            return self.sub[id(e)]
        if e.op == ACTIVEMASK:  # every lane's bit set
            return E.const((1 << e.dtype.bits) - 1 if e.dtype.is_uint else -1, e.dtype)
        return self.generic_visit(e)


class _Moved(Mutator):
    """Accesses of ``old`` made to ``new`` at ``base`` further on (the thread's own slice)."""

    def __init__(self, old: S.Buffer, new: S.Buffer, base: E.PrimExpr):
        self.old, self.new, self.base = old, new, base

    def _index(self, idx: E.PrimExpr) -> E.PrimExpr:
        if isinstance(idx, E.Ramp):
            return E.Ramp(E.add(idx.base, E.cast(self.base, idx.base.dtype)), idx.stride, idx.lanes)
        return E.add(idx, E.cast(self.base, idx.dtype))

    def visit_BufferLoad(self, e: E.BufferLoad):
        e = self.generic_visit(e)
        if e.buffer is not self.old:
            return e
        return E.BufferLoad(self.new, [self._index(e.indices[0])])

    def visit_BufferStore(self, s: S.BufferStore):
        s = self.generic_visit(s)
        if s.buffer is not self.old:
            return s
        return S.BufferStore(self.new, s.value, [self._index(s.indices[0])])


__all__ = ["NotSerial", "as_cpu", "serial_kernel"]
