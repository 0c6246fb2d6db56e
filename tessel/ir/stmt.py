"""Statement nodes of the loop IR, buffers, and the lowered function.

Two levels share these classes. Right after scheduling, statements speak of te tensors
(``ProducerRealize`` / ``ProducerStore`` / ``ProducerLoad``), exactly like the listings of
seed 000. Storage flattening turns them into ``Allocate`` / ``BufferStore`` / ``BufferLoad``
on one-dimensional :class:`Buffer` s: the form both code generators consume.
"""

from __future__ import annotations

from ..errors import InternalError
from .dtype import DType, DTypeLike
from .dtype import dtype as to_dtype
from .expr import IntImm, Node, PrimExpr, Range, Var, convert
from .kinds import AttrKey, LoopKind


class Stmt(Node):
    __slots__ = ()


class Buffer(Node):
    """A named, typed, dense row-major array (``scope`` says where it lives)."""

    __slots__ = ("name", "dtype", "shape", "scope")
    _fields = ("name", "dtype", "shape", "scope")

    def __init__(self, name: str, dtype: DTypeLike, shape, scope: str = "global"):
        self.name = name
        self.dtype: DType = to_dtype(dtype)
        self.shape = tuple(convert(s) for s in shape)
        self.scope = scope

    __hash__ = object.__hash__


#: the thread tags of a ``thread_binding`` loop that a device launch provides, blocks then
#: threads (x, y, z): the one table the passes and generators name them by (what tag a schedule
#: may bind, virtual threads included, is ``schedule.threads.thread_scope``'s to say)
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
LAUNCH_TAGS = BLOCK_TAGS + THREAD_TAGS


class For(Stmt):
    """``for (var, min, extent)``; kind is serial, parallel, vectorized, unrolled or a thread binding."""

    __slots__ = ("loop_var", "min", "extent", "kind", "body", "thread_tag")
    _fields = ("loop_var", "min", "extent", "kind", "body", "thread_tag")
    KINDS = (LoopKind.SERIAL, LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED, LoopKind.THREAD_BINDING)

    def __init__(self, loop_var: Var, min: PrimExpr, extent: PrimExpr, kind: LoopKind | str, body: Stmt,
                 thread_tag: str = ""):
        if kind not in self.KINDS:
            raise InternalError(f"a loop of kind {kind!r}: a For is one of {', '.join(self.KINDS)}")
        self.loop_var, self.min, self.extent = loop_var, convert(min), convert(extent)
        self.kind, self.body, self.thread_tag = LoopKind(kind), body, thread_tag


class SeqStmt(Stmt):
    __slots__ = ("seq",)
    _fields = ("seq",)

    def __init__(self, seq):
        self.seq = tuple(seq)

    def __getitem__(self, k: int) -> Stmt:
        """The ``k``-th statement (TVM's ``SeqStmt`` is indexed so)."""
        return self.seq[k]

    def __len__(self) -> int:
        return len(self.seq)


class IfThenElse(Stmt):
    __slots__ = ("condition", "then_case", "else_case")
    _fields = ("condition", "then_case", "else_case")

    def __init__(self, condition: PrimExpr, then_case: Stmt, else_case: Stmt | None = None):
        self.condition, self.then_case, self.else_case = condition, then_case, else_case


class LetStmt(Stmt):
    __slots__ = ("var", "value", "body")
    _fields = ("var", "value", "body")

    def __init__(self, var: Var, value: PrimExpr, body: Stmt):
        self.var, self.value, self.body = var, value, body


class Binding(LetStmt):
    """A ``LetStmt`` a builder means as a renaming, never seen past the builder: it binds a
    loop's variable in a body already built, and ``functor.inline_lets`` replaces every one by
    its body, the variable replaced by the value, in one walk (a class, not a set of variables:
    a substitution that renames the variable, as a reduction's init nest does, keeps it)."""

    __slots__ = ()


class AttrStmt(Stmt):
    """Carries a fact about ``node`` to the statements in ``body`` (e.g. ``produce``)."""

    __slots__ = ("node", "key", "value", "body")
    _fields = ("node", "key", "value", "body")

    def __init__(self, node, key: AttrKey | str, value, body: Stmt):
        known = AttrKey._value2member_map_.get(key)  # a key spelled as its name is the enum's
        self.node, self.key, self.value, self.body = node, known if known is not None else key, value, body


class Evaluate(Stmt):
    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, value):
        self.value = convert(value)


class ProducerStore(Stmt):
    """``T(i, j) = value`` on a te tensor (TVM's Provide)."""

    __slots__ = ("producer", "value", "indices")
    _fields = ("producer", "value", "indices")

    def __init__(self, producer, value: PrimExpr, indices):
        self.producer, self.value, self.indices = producer, value, tuple(indices)


class ProducerRealize(Stmt):
    """Storage for the region ``bounds`` of a te tensor, live within ``body``."""

    __slots__ = ("producer", "bounds", "body", "scope")
    _fields = ("producer", "bounds", "body", "scope")

    def __init__(self, producer, bounds: tuple[Range, ...], body: Stmt, scope: str = "global"):
        self.producer, self.bounds, self.body, self.scope = producer, tuple(bounds), body, scope


class BufferStore(Stmt):
    __slots__ = ("buffer", "value", "indices")
    _fields = ("buffer", "value", "indices")

    def __init__(self, buffer: Buffer, value: PrimExpr, indices):
        self.buffer, self.value, self.indices = buffer, value, tuple(indices)


class Allocate(Stmt):
    """Storage for ``buffer`` (of its full, flat shape), live within ``body``."""

    __slots__ = ("buffer", "body")
    _fields = ("buffer", "body")

    def __init__(self, buffer: Buffer, body: Stmt):
        self.buffer, self.body = buffer, body

    @property
    def extents(self) -> tuple[PrimExpr, ...]:
        """The allocated shape, under TVM's name for it (TE users walk allocations with it)."""
        return self.buffer.shape

    @property
    def dtype(self) -> DType:
        return self.buffer.dtype


class IndexGuard(Node):
    """What the symbolic sizes of a call must satisfy for one index computation to fit its dtype.

    Index arithmetic over symbolic sizes keeps the sizes' dtype (seed 002), so ``i*m + j`` is
    int32 arithmetic for int32 sizes even though ``n*m`` may exceed int32 at run time. ``low``
    and ``high`` bound the values of ``expr`` (described by ``what``, e.g. "the index of B") in
    terms of the size vars only; each call evaluates them exactly and refuses sizes for which
    they leave ``expr.dtype`` (``None``: that side always fits). ``when`` are the conditions on
    the sizes under which ``expr`` runs at all (the branches a loop partition specialised on the
    sizes): a guard whose branch the sizes do not take does not apply.
    """

    __slots__ = ("what", "expr", "low", "high", "when")
    _fields = ("what", "expr", "low", "high", "when")

    def __init__(self, what: str, expr: PrimExpr, low: PrimExpr | None, high: PrimExpr | None, when=()):
        self.what, self.expr, self.low, self.high = what, expr, low, high
        self.when = tuple(when)


class PrimFunc(Node):
    """A lowered kernel: buffer parameters (in call order) and a body over flat buffers.

    ``size_vars`` are the symbolic sizes, in the order the native calling convention passes
    them (after the buffers); each is bound from the first buffer dimension it names.
    ``guards`` are the conditions on those sizes that the body's narrow index arithmetic needs
    (:class:`IndexGuard`), checked at every call. ``assumptions`` are the user's promises about
    the sizes (``s.assume``) as ``(text, condition)`` pairs, also checked at every call; they
    are not a child the visitors walk, but they are part of the kernel's fingerprint.

    ``scalar_args`` are the scalars the caller passes by value (TVM's ``te.var`` in the argument
    list, of any dtype), as ``(position in the call, var)``; each is also among ``size_vars``
    (that is how the code receives it) and, where a shape names it too, the array must agree.
    The buffers take the other positions of the call, in order.
    """

    __slots__ = ("name", "params", "size_vars", "body", "outputs", "guards", "scalar_args", "assumptions")
    _fields = ("name", "params", "size_vars", "body", "outputs", "guards", "scalar_args")

    def __init__(self, name: str, params, size_vars, body: Stmt, outputs=(), guards=(), scalar_args=(),
                 assumptions=()):
        self.assumptions = tuple(assumptions)
        self.name = name
        self.params = tuple(params)
        self.size_vars = tuple(size_vars)
        self.body = body
        self.outputs = tuple(outputs)
        self.guards = tuple(guards)
        self.scalar_args = tuple(scalar_args)

    def with_body(self, body: Stmt) -> PrimFunc:
        """The same kernel over another body (a pass's result)."""
        return PrimFunc(self.name, self.params, self.size_vars, body, self.outputs, self.guards, self.scalar_args,
                        self.assumptions)


def seq(*stmts: Stmt | None) -> Stmt:
    """A sequence without empty parts or nested sequences (a single statement stays itself)."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        elif not (isinstance(s, Evaluate) and isinstance(s.value, PrimExpr) and _is_noop(s.value)):
            flat.append(s)
    if not flat:
        return Evaluate(0)
    return flat[0] if len(flat) == 1 else SeqStmt(flat)


def _is_noop(v: PrimExpr) -> bool:
    return isinstance(v, IntImm)
