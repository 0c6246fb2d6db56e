"""Vectorization: a ``vectorized`` loop becomes Ramp/Broadcast vector code.

A ``#pragma`` asks the C compiler to vectorize and lets it silently decline; vector
expressions in the IR are a fact both backends must honour. So a vectorized loop ``for (v, m,
N)`` is strip-mined into chunks of ``L`` lanes, ``L`` the widest power of two not above ``N``
that the target's vector registers hold for the widest element type in the body (16 float32
lanes with AVX-512); each chunk's body sees ``v`` as ``ramp(m + c*L, 1, L)``. What is left
(``N mod L`` iterations) is vectorized again with fewer lanes, down to a single scalar
iteration, so 7 becomes 4 + 2 + 1 lanes and no iteration runs under a per-lane condition.
A symbolic extent gets whole vectors while ``L`` iterations remain, then a scalar loop.

Inside the body an expression that does not depend on ``v`` stays scalar (and is broadcast
where it meets a vector); a load or store whose flat index is ``base + stride*v`` becomes a
vector access (stride 1: contiguous; another constant stride: a gather/scatter); inner loops
keep their scalar loop variable and get a vector body.

When the body cannot be expressed this way the loop stays a scalar loop, and an
``AttrStmt("not_vectorized", reason)`` around it says why in the IR and as a comment in the
generated C: an extent known to stay below two vectors, a data-dependent index, a condition
on ``v``, a store that all lanes would make to one element, a possible dependence between
iterations through a buffer (read at another index than it is written), a conditional load
(which might read out of bounds in the lanes that are not selected).

A loop that stores contiguously into a large output the kernel never reads back (see
:func:`streaming_outputs`) has its vectors marked ``stream_store`` for the C generator to
write past the caches; each streams where its address is aligned. A long or symbolic row is
first peeled until the store address is aligned (a split whose inner part alone was
vectorized is re-fused into one loop, since only a whole row can be peeled); a row of at most
``tunables.max_unrolled_chunks`` vectors is not, since the peel's runtime count would index what the
row is read from (a register tile) at a runtime offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..arith import Analyzer
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, StructKey, collect, structural_equal, substitute, uses_var
from ..ir.intrinsics import lookup
from ..ir.stmt import AttrKey, LoopKind
from ..tunables import current
from .carried import carrying_loops
from .simplify import simplify_stmt

if TYPE_CHECKING:  # annotations only: a pass receives its target and never imports the target package
    from ..target import Target

ALIGN_GAP = "tsl_align_gap"  # intrinsic: elements from an address to the next vector-aligned one


class NotVectorizable(Exception):
    """Why a loop body has no vector form (the message ends up in the generated code)."""


def vectorize(stmt: S.Stmt, target: Target, stream: frozenset[int] = frozenset()) -> S.Stmt:
    """Turn every ``vectorized`` loop into vector code for ``target``'s vector width (or a
    scalar loop with the reason).

    ``stream`` holds the ids of output buffers worth writing with streaming (non-temporal)
    stores (see :func:`streaming_outputs`); they are used, after an alignment peel, only when
    the target has them (its ``streaming_stores`` feature: x86).
    """
    if not target.streaming_stores:
        stream = frozenset()
    vectorized = collect(stmt, lambda n: isinstance(n, S.For) and n.kind == LoopKind.VECTORIZED, statements_only=True)
    carried = carrying_loops(stmt, (LoopKind.VECTORIZED,)) if vectorized else {}
    free = frozenset(id(lp.loop_var) for lp in vectorized if id(lp) not in carried)
    return _VectorizeLoops(max(int(target.vector_bytes), 8), stream, free).visit(stmt)


def streaming_outputs(stmt: S.Stmt, params) -> frozenset[int]:
    """Parameters worth writing with streaming stores: written, never read back by the kernel,
    and of a constant size of at least ``tunables.stream_min_bytes``.

    An ordinary store first reads the line it writes into the cache (the write-allocate), so
    a kernel streaming out a large result moves it over the memory bus twice; a streaming
    store skips that read, and the result would not have stayed in the caches anyway.
    """
    loaded = {id(n.buffer) for n in collect(stmt, lambda n: isinstance(n, E.BufferLoad))}
    written = {id(n.buffer) for n in collect(stmt, lambda n: isinstance(n, S.BufferStore), statements_only=True)}
    out, least = set(), current().stream_min_bytes
    for b in params:
        if id(b) not in written or id(b) in loaded or not all(isinstance(x, E.IntImm) for x in b.shape):
            continue
        nbytes = max(b.dtype.bits // 8, 1)
        for x in b.shape:
            nbytes *= x.value
        if nbytes >= least:
            out.add(id(b))
    return frozenset(out)


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def _elem_bits(body: S.Stmt) -> int:
    bits = [n.dtype.bits for n in collect(body, lambda n: isinstance(n, E.BufferLoad | E.Cast | E.Call))]
    bits += [n.buffer.dtype.bits for n in collect(body, lambda n: isinstance(n, S.BufferStore), statements_only=True)]
    return max([b for b in bits if b >= 8] or [32])


class _VectorizeLoops(Mutator):
    def __init__(self, vector_bytes: int, stream: frozenset[int] = frozenset(), free: frozenset[int] = frozenset()):
        self.vector_bytes = vector_bytes
        self.stream = stream
        self.free = free  # ids of the variables of vectorized loops no two iterations of which touch one element
        self.max_chunks = current().max_unrolled_chunks  # more chunks than this stay a loop over chunks
        self.ana = Analyzer()

    def visit_For(self, s: S.For):
        fused = self._fuse_for_streaming(s)
        if fused is not None:
            return self.visit(fused)
        with self.ana.scoped_bind(s.loop_var, E.Range(s.min, s.extent)):  # inner extents may use it
            body = self.visit(s.body)  # inner loops first
        if s.kind != LoopKind.VECTORIZED:
            return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)
        return self.vectorize_loop(S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag))

    def _fuse_for_streaming(self, s: S.For) -> S.For | None:
        """``for (o, 0, n) { vectorized (i, 0, L) { out[o*L + i] = ... } }`` (a split, then the
        inner part vectorized) as one vectorized loop ``(x, 0, n*L)``, when it writes a
        streaming output: only a whole row can be peeled to an aligned start."""
        inner = s.body
        if s.kind != LoopKind.SERIAL or not isinstance(inner, S.For) or inner.kind != LoopKind.VECTORIZED or not self.stream:
            return None
        if not (E.is_const_int(s.min, 0) and E.is_const_int(inner.min, 0) and isinstance(inner.extent, E.IntImm)):
            return None
        if self._stream_store(inner) is None:
            return None
        o, i, L = s.loop_var, inner.loop_var, inner.extent
        x = E.Var(f"{o.name}.{i.name}.fused", o.dtype)
        total = E.binary_exact(E.Mul, s.extent, E.cast(L, s.extent.dtype))  # widened later if it must be
        body = substitute(inner.body, {o: E.floordiv(x, E.cast(L, x.dtype)), i: E.floormod(x, E.cast(L, x.dtype))})
        with self.ana.scoped_bind(x, E.Range(E.const(0, x.dtype), total)):
            body = simplify_stmt(body)
        if uses_var(body, lambda v: v is x) and collect(body, lambda n: isinstance(n, E.FloorDiv | E.FloorMod)
                                                        and uses_var(n, lambda v: v is x)):
            return None  # the body uses o or i apart from o*L + i: keep the loops as they are
        return S.For(x, E.const(0, x.dtype), total, LoopKind.VECTORIZED, body, s.thread_tag)

    def vectorize_loop(self, s: S.For) -> S.Stmt:
        ext = self.ana.simplify(s.extent)
        if not isinstance(ext, E.IntImm):
            return self.vectorize_symbolic(s, ext)
        n = ext.value
        if n <= 0:
            return S.Evaluate(0)
        if n == 1:
            return substitute(s.body, {s.loop_var: s.min})
        if collect(s.body, lambda x: isinstance(x, E.Ramp | E.Broadcast) or (
                isinstance(x, E.PrimExpr) and x.dtype.lanes > 1)):
            return _scalar(s, "it contains another vectorized loop")
        lanes = min(_pow2_floor(n), max(self.vector_bytes * 8 // _elem_bits(s.body), 2))
        store = self._stream_store(s) if n >= 4 * lanes else None
        whole = n // lanes <= self.max_chunks
        if store is not None and not whole:
            out = self.vectorize_streaming(s, ext)
            if out is not None:
                return out
        out = self._whole_vectors(s, n, lanes)
        if store is None or not whole or (isinstance(out, S.AttrStmt) and out.key == AttrKey.NOT_VECTORIZED):
            return out
        # A row short enough to unroll whole is not peeled: a peel of a runtime count would index
        # whatever the row is read from (a register tile's accumulators) by a runtime value, and
        # the C compiler would keep the whole tile in memory (at 2048 the matmul ran at a third
        # of its speed). Each vector store streams where its address is aligned.
        return S.AttrStmt(store.buffer, AttrKey.STREAM_STORE, lanes, out)

    def _whole_vectors(self, s: S.For, n: int, lanes: int) -> S.Stmt:
        """A constant extent ``n`` as chunks of ``lanes``, the rest vectorized again with fewer."""
        chunks, tail = divmod(n, lanes)
        c = E.Var(s.loop_var.name + ".c", s.loop_var.dtype)
        base = E.add(s.min, E.mul(c, E.const(lanes, c.dtype))) if chunks > 1 else s.min
        try:
            vbody = _Vectorizer(s.loop_var, self.ana.simplify(base), lanes, self.ana, self.free).run(s.body)
        except NotVectorizable as why:
            return _scalar(s, str(why))
        if chunks == 1:
            main = vbody
        else:
            kind = LoopKind.UNROLLED if chunks <= self.max_chunks else LoopKind.SERIAL
            main = S.For(c, E.const(0, c.dtype), E.const(chunks, c.dtype), kind, vbody)
        if tail == 0:
            return main
        rest_min = self.ana.simplify(E.add(s.min, E.const(chunks * lanes, s.min.dtype)))
        v = E.Var(s.loop_var.name, s.loop_var.dtype)
        rest = S.For(v, rest_min, E.const(tail, s.extent.dtype), LoopKind.VECTORIZED,
                     substitute(s.body, {s.loop_var: v}), s.thread_tag)
        return S.seq(main, self.vectorize_loop(rest))


    def vectorize_symbolic(self, s: S.For, ext: E.PrimExpr) -> S.Stmt:
        """A symbolic extent: whole vectors while at least ``L`` iterations remain, then a scalar
        loop for the rest (fewer than ``L``). Extents known to stay below two vectors (a loop
        tightened to a partition's tail) are left scalar: the vector part would hardly ever run."""
        lanes = max(self.vector_bytes * 8 // _elem_bits(s.body), 2)
        hi = self.ana.const_int_bound(ext)[1]
        if hi is not None and hi < 2 * lanes:
            return _scalar(s, f"the extent {ext} is not a constant and at most {hi}")
        if collect(ext, lambda x: isinstance(x, E.BufferLoad)):
            return _scalar(s, f"the extent {ext} depends on data")
        if collect(s.body, lambda x: isinstance(x, E.PrimExpr) and x.dtype.lanes > 1):
            return _scalar(s, "it contains another vectorized loop")
        if self._stream_store(s) is not None:
            out = self.vectorize_streaming(s, ext)
            if out is not None:
                return out
        c = E.Var(s.loop_var.name + ".c", s.loop_var.dtype)
        L = E.const(lanes, ext.dtype)
        ext = self.ana.simplify(E.max_(ext, E.const(0, ext.dtype)))  # a negative extent runs nothing
        chunks = self.ana.simplify(E.floordiv(ext, L))
        try:
            vbody = _Vectorizer(s.loop_var, self.ana.simplify(E.add(s.min, E.mul(c, L))), lanes, self.ana, self.free).run(s.body)
        except NotVectorizable as why:
            return _scalar(s, str(why))
        main = S.For(c, E.const(0, c.dtype), chunks, LoopKind.SERIAL, vbody)
        v = E.Var(s.loop_var.name, s.loop_var.dtype)
        done = self.ana.simplify(E.mul(chunks, L))
        rest = S.For(v, self.ana.simplify(E.add(s.min, done)), self.ana.simplify(E.sub(ext, done)), LoopKind.SERIAL,
                     substitute(s.body, {s.loop_var: v}), s.thread_tag)
        return S.seq(main, rest)


    # ---- streaming stores ----------------------------------------------------------------------
    def _stream_store(self, s: S.For) -> S.BufferStore | None:
        """The contiguous store to a streaming output made directly by this loop's body, if any."""
        if not self.stream:
            return None
        found: list[S.BufferStore] = []

        def walk(n) -> None:
            if isinstance(n, S.BufferStore):
                found.append(n)
            elif isinstance(n, S.SeqStmt):
                for x in n.seq:
                    walk(x)
            elif isinstance(n, S.LetStmt | S.AttrStmt):
                walk(n.body)

        walk(s.body)
        v = s.loop_var
        for st in found:
            if id(st.buffer) not in self.stream:
                continue
            idx = st.indices[0]
            step = self.ana.simplify(E.sub(substitute(idx, {v: E.cast(E.add(v, 1), v.dtype)}), idx))
            if E.is_const_int(step, 1):
                return st
        return None

    def vectorize_streaming(self, s: S.For, ext: E.PrimExpr) -> S.Stmt | None:
        """Peel scalar iterations until the streaming output's address is vector-aligned (a
        streaming store must be), then whole aligned vectors, then a scalar tail::

            let head = min(extent, align_gap(&out[first index], vector bytes))
            for (v, m, head) ...                      // scalar
            stream_store out { for (c, 0, (extent - head) / L) ...vectors... }
            for (v, m + head + chunks*L, rest) ...    // scalar
        """
        store = self._stream_store(s)
        assert store is not None
        lanes = max(self.vector_bytes * 8 // _elem_bits(s.body), 2)
        v, dt = s.loop_var, s.loop_var.dtype
        elem = max(store.buffer.dtype.bits // 8, 1)
        first = self.ana.simplify(substitute(store.indices[0], {v: s.min}))
        ext = self.ana.simplify(E.max_(ext, E.const(0, ext.dtype)))
        gap = E.Var(v.name + ".head", dt)
        gap_value = E.Call(dt, ALIGN_GAP, (E.BufferLoad(store.buffer, (first,)), E.const(lanes * elem, dt)))
        gap_value = E.min_(E.cast(ext, dt), gap_value)
        c = E.Var(v.name + ".c", dt)
        L = E.const(lanes, dt)
        start = E.add(s.min, gap)
        try:
            vbody = _Vectorizer(v, self.ana.simplify(E.add(start, E.mul(c, L))), lanes, self.ana, self.free).run(s.body)
        except NotVectorizable:
            return None
        rest = self.ana.simplify(E.sub(ext, gap))
        chunks = self.ana.simplify(E.floordiv(rest, L))
        done = self.ana.simplify(E.mul(chunks, L))
        v1, v2 = E.Var(v.name, dt), E.Var(v.name, dt)
        head = S.For(v1, s.min, gap, LoopKind.SERIAL, substitute(s.body, {v: v1}), s.thread_tag)
        main = S.AttrStmt(store.buffer, AttrKey.STREAM_STORE, lanes,
                          S.For(c, E.const(0, dt), chunks, LoopKind.SERIAL, vbody))
        tail = S.For(v2, self.ana.simplify(E.add(start, done)), self.ana.simplify(E.sub(rest, done)), LoopKind.SERIAL,
                     substitute(s.body, {v: v2}), s.thread_tag)
        return S.LetStmt(gap, gap_value, S.seq(head, main, tail))


def _scalar(s: S.For, reason: str) -> S.Stmt:
    loop = S.For(s.loop_var, s.min, s.extent, LoopKind.SERIAL, s.body, s.thread_tag)
    return S.AttrStmt(s.loop_var, AttrKey.NOT_VECTORIZED, reason, loop)


def _bcast(e: E.PrimExpr, lanes: int) -> E.PrimExpr:
    return e if e.dtype.lanes == lanes else E.Broadcast(e, lanes)


class _Vectorizer(Mutator):
    """The body of one chunk: ``var`` is ``ramp(base, 1, lanes)``."""

    def __init__(self, var: E.Var, base: E.PrimExpr, lanes: int, ana: Analyzer, free: frozenset[int] = frozenset()):
        self.var, self.base, self.lanes, self.ana = var, base, lanes, ana
        self.free = id(var) in free  # proved (passes/carried.py): no two iterations touch one element
        self.vector_vars: dict[E.Var, E.Var] = {}  # let-bound scalars that became vectors
        self.safe_loads: set[StructKey] = set()    # loads the current statement makes in every lane anyway

    def run(self, body: S.Stmt) -> S.Stmt:
        self._check_dependences(body)
        return self.visit(body)

    def varies(self, e) -> bool:
        return uses_var(e, lambda v: v is self.var or v in self.vector_vars)

    # ---- checks on the whole body ---------------------------------------------------------------
    def _check_dependences(self, body: S.Stmt) -> None:
        """Lanes run in lockstep, so a buffer written in the body may only be read where it is written."""
        stores = collect(body, lambda n: isinstance(n, S.BufferStore), statements_only=True)
        loads = collect(body, lambda n: isinstance(n, E.BufferLoad))
        written: dict[int, list] = {}
        for st in stores:
            written.setdefault(id(st.buffer), []).append(st)
        for st in stores:
            if not self.varies(st.indices[0]):
                raise NotVectorizable(
                    f"every lane would store to the same element {st.buffer.name}[{st.indices[0]}]")
        for buf_stores in written.values():
            first = buf_stores[0].indices[0]
            if any(not structural_equal(first, other.indices[0]) for other in buf_stores[1:]):
                raise NotVectorizable(f"{buf_stores[0].buffer.name} is written at more than one index")
        for ld in loads:
            ws = written.get(id(ld.buffer))
            if ws and not self.free and not structural_equal(ld.indices[0], ws[0].indices[0]):
                raise NotVectorizable(
                    f"{ld.buffer.name} is read at [{ld.indices[0]}] and written at [{ws[0].indices[0]}]: "
                    "iterations might depend on each other")
        for a in collect(body, lambda n: isinstance(n, S.Allocate), statements_only=True):
            raise NotVectorizable(f"it allocates {a.buffer.name} inside the loop")

    # ---- indices ----------------------------------------------------------------------------------
    def index(self, idx: E.PrimExpr, what: str) -> E.PrimExpr:
        """The vector (or scalar) form of a flat index: ``base + stride*var`` only."""
        if not self.varies(idx):
            return self.visit(idx)
        if collect(idx, lambda n: isinstance(n, E.BufferLoad)):
            raise NotVectorizable(f"the index of {what} depends on data ([{idx}])")
        if uses_var(idx, lambda v: v in self.vector_vars):
            raise NotVectorizable(f"the index of {what} uses a value computed per lane ([{idx}])")
        v = self.var
        linear = self.ana.linear_in(idx, v)
        if linear is None:
            raise NotVectorizable(f"the index of {what} is not linear in {v.name} ([{idx}])")
        base = self.ana.simplify(substitute(idx, {v: self.base}))
        if linear[0] == 0:
            return base
        return E.Ramp(base, E.IntImm(linear[0], idx.dtype), self.lanes)

    # ---- statements -------------------------------------------------------------------------------
    def visit_BufferStore(self, s: S.BufferStore):
        if s.buffer.dtype.is_bool or s.buffer.dtype == "float16":
            raise NotVectorizable(f"{s.buffer.name} has dtype {s.buffer.dtype}, which has no vector form here")
        idx = self.index(s.indices[0], f"the store to {s.buffer.name}")
        self.safe_loads = {StructKey(ld) for ld in _unconditional_loads(s.value)}
        value = self.visit(s.value)
        if idx.dtype.lanes > 1:
            value = _bcast(value, self.lanes)
        return S.BufferStore(s.buffer, value, (idx,))

    def visit_IfThenElse(self, s: S.IfThenElse):
        if self.varies(s.condition):
            raise NotVectorizable(f"the condition `{s.condition}` depends on {self.var.name}")
        return self.generic_visit(s)

    def visit_For(self, s: S.For):
        if self.varies(s.min) or self.varies(s.extent):
            raise NotVectorizable(f"the bounds of the inner loop {s.loop_var.name} depend on {self.var.name}")
        return self.generic_visit(s)

    def visit_LetStmt(self, s: S.LetStmt):
        # the value's own unconditional loads are made in every lane anyway (a tuple reduction's
        # combine is a let per part: argmax's select reads the accumulators it chooses between)
        self.safe_loads = {StructKey(ld) for ld in _unconditional_loads(s.value)}
        value = self.visit(s.value)
        if value.dtype.lanes == 1:
            body = self.visit(s.body)
            return S.LetStmt(s.var, value, body)
        nv = E.Var(s.var.name, s.var.dtype.with_lanes(self.lanes))
        self.vector_vars[s.var] = nv
        body = self.visit(s.body)
        return S.LetStmt(nv, value, body)

    def visit_Evaluate(self, s: S.Evaluate):
        if self.varies(s.value):
            raise NotVectorizable(f"`{s.value}` is evaluated for its effect in every lane")
        return s

    # ---- expressions ------------------------------------------------------------------------------
    def visit_Var(self, e: E.Var):
        if e is self.var:
            return E.Ramp(self.base, E.const(1, e.dtype), self.lanes)
        return self.vector_vars.get(e, e)

    def visit_BufferLoad(self, e: E.BufferLoad):
        if not self.varies(e.indices[0]):
            return e
        if e.buffer.dtype.is_bool or e.buffer.dtype == "float16":
            raise NotVectorizable(f"{e.buffer.name} has dtype {e.buffer.dtype}, which has no vector form here")
        return E.BufferLoad(e.buffer, (self.index(e.indices[0], f"the load from {e.buffer.name}"),))

    def _binary(self, e: E.BinaryOp):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        if a.dtype.lanes == 1 and b.dtype.lanes == 1:
            return type(e)(a, b)
        return type(e)(_bcast(a, self.lanes), _bcast(b, self.lanes))

    visit_Add = visit_Sub = visit_Mul = visit_Div = visit_Mod = visit_FloorDiv = visit_FloorMod = _binary
    visit_Min = visit_Max = visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = _binary
    visit_And = visit_Or = _binary

    def visit_Not(self, e: E.Not):
        a = self.visit(e.a)
        return e if a is e.a else E.Not(a)

    def _choice(self, e: E.PrimExpr, cond: E.PrimExpr, t: E.PrimExpr, f: E.PrimExpr, rebuild) -> E.PrimExpr:
        """A select: per lane when the condition varies (both sides are then computed in every
        lane, so a load only the chosen lanes would make is refused), else of whole vectors."""
        c2 = self.visit(cond)
        if c2.dtype.lanes > 1 and (self._unsafe_load(t) or self._unsafe_load(f)):
            raise NotVectorizable(
                f"`{e}` chooses between loads per lane; the unchosen lanes might read out of bounds")
        t2, f2 = self.visit(t), self.visit(f)
        if all(x.dtype.lanes == 1 for x in (c2, t2, f2)):
            return e if (c2 is cond and t2 is t and f2 is f) else rebuild(c2, t2, f2)
        return rebuild(c2, _bcast(t2, self.lanes), _bcast(f2, self.lanes))

    def visit_Select(self, e: E.Select):
        return self._choice(e, e.condition, e.true_value, e.false_value, E.Select)

    def visit_Cast(self, e: E.Cast):
        v = self.visit(e.value)
        if v is e.value:
            return e
        if e.dtype == "float16" or e.dtype.is_bool:
            if v.dtype.lanes > 1:
                raise NotVectorizable(f"a cast to {e.dtype} has no vector form here")
        return E.Cast(e.dtype.with_lanes(v.dtype.lanes), v)

    def visit_Call(self, e: E.Call):
        if e.op == "if_then_else":
            return self._choice(e, *e.args, lambda c, t, f: E.Call(t.dtype, "if_then_else", (c, t, f)))
        args = [self.visit(a) for a in e.args]
        if all(a is b for a, b in zip(args, e.args)):
            return e
        spec = lookup(e.op)
        if spec is not None and not spec.vectorizable:
            raise NotVectorizable(f"`{e.op}` has no vector form")
        if e.dtype == "float16" or e.dtype.is_bool:
            raise NotVectorizable(f"`{e.op}` on {e.dtype} has no vector form here")
        args = [_bcast(a, self.lanes) for a in args]
        return E.Call(e.dtype.with_lanes(self.lanes), e.op, args)

    def visit_Let(self, e: E.Let):
        if self.varies(e):
            raise NotVectorizable(f"`{e}` binds a value per lane inside an expression")
        return e

    def visit_Ramp(self, e):
        raise NotVectorizable("it contains another vectorized loop")

    visit_Broadcast = visit_Ramp


    def _unsafe_load(self, e: E.PrimExpr) -> bool:
        """A per-lane load that only the chosen lanes would make (so it may be out of bounds)."""
        return any(self.varies(ld.indices[0]) and StructKey(ld) not in self.safe_loads
                   for ld in collect(e, lambda n: isinstance(n, E.BufferLoad)))


def _unconditional_loads(e: E.PrimExpr) -> list[E.BufferLoad]:
    """Loads evaluated whatever the conditions say: not inside the branches of a choice."""
    out: list[E.BufferLoad] = []

    def walk(x) -> None:
        if isinstance(x, E.BufferLoad):
            out.append(x)
        if isinstance(x, E.Select):
            walk(x.condition)
            return
        if isinstance(x, E.Call) and x.op == "if_then_else":
            walk(x.args[0])
            return
        for f in x.fields():
            for y in (f if isinstance(f, tuple) else (f,)):
                if isinstance(y, E.PrimExpr):
                    walk(y)

    walk(e)
    return out


__all__ = ["NotVectorizable", "streaming_outputs", "vectorize"]
