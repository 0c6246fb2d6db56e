"""Recurrences TE cannot write: a tensor defined by several definitions that read it.

``te.recurrence(shape, [te.define(f0), te.define(f1, where=...), ...])`` defines one tensor
``h`` as Tiramisu's ``add_definitions`` and Halide's update definitions do: the definitions run
one after the other, each over its domain (the shape, cut by its ``where``), and each body
``f(h, i, j, ...)`` reads ``h`` as it is at that moment: values its own earlier points wrote,
else the previous definitions' (or, in place, the input's). So ``h[i, j] = f(h[i-1, j],
h[i, j-1])`` is a recurrence in two dimensions, ``C[i] = (C[i-1] + C[i-2]) / 2`` after two
initial definitions a Fibonacci-like one, and ``inplace=Img`` writes the results into the
input ``Img`` itself (no copy; ``build(s, [Img])``).

Each definition is an operation of its own (so a stage: ``s[h.op.definitions[k]]`` schedules
it, the last one is ``h`` itself) that reads the previous one; all of them share one storage
(:meth:`~tessel.te.operation.Operation.storage`), which is what makes the later read the
earlier. Loops run in an order that respects the reads of the tensor by itself: each axis runs
forwards unless the definition reads a later index along it (an IIR filter run backwards,
``y[i] = x[i] + a*y[i+1]``), which :meth:`DefinitionOp.reindex` expresses. A definition whose
self-reads no axis direction satisfies (``h[i-1]`` and ``h[i+1]``) is refused when it is
written; the order a schedule finally gives is checked against every self-read exactly
(``tessel.poly.recurrence``) when it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass

from ..arith import Analyzer, IntSet
from ..errors import DefinitionError, LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import dtype as to_dtype
from ..ir.functor import Mutator, children, collect, structural_equal
from ..ir.serialize import register
from .operation import LoopNest, Operation, Request, TensorList
from .scan import Redirect
from .tensor import (
    ComputeOp,
    Tensor,
    _check_body,
    _check_shape,
    _loaded,
    _ReadRewriter,
    domain_condition,
    finished_reduction,
)


@dataclass(frozen=True)
class Definition:
    """One definition of a recurrence: ``fcompute(h, *indices)`` over the points where
    ``where(*indices)`` holds (all of the shape when None)."""

    fcompute: Callable
    where: Callable | E.PrimExpr | None = None
    name: str | None = None


def define(fcompute: Callable, where: Callable | E.PrimExpr | None = None, name: str | None = None) -> Definition:
    """A definition for :func:`recurrence`: ``h[i, ...] = fcompute(h, i, ...)`` where ``where``."""
    if not callable(fcompute):
        raise DefinitionError(f"te.define: fcompute must be a function (h, i, j, ...) -> value, got {fcompute!r}")
    return Definition(fcompute, where, name)


class DefinitionOp(ComputeOp):
    """One definition of a recurrence: a compute over (part of) the shape whose outputs share
    one storage with the other definitions; ``prev`` (the definition before, or the tensor
    written in place) is read first, whole."""

    #: the definitions of the recurrence, in order (set on every one when the last is made)
    definitions: tuple[Tensor, ...] = ()

    def __init__(self, name: str, tag: str, attrs: dict | None, axis, body, where, prev: Tensor | None,
                 base: Tensor | None, directions: Sequence[int], self_tensor: Tensor | None = None):
        super().__init__(name, tag, attrs, axis, body, where)
        self.prev = prev
        #: the tensor whose storage every definition writes (None until the recurrence is complete:
        #: then the input written in place, or the last definition's output)
        self.base = base
        self.directions = tuple(directions)
        if self_tensor is not None and self_tensor is not self.outputs[0]:  # a rebuilt op reads itself
            rw = _SelfRewriter(self_tensor, self.outputs[0])
            self.body = tuple(rw.visit(b) for b in self.body)

    # ---- what it is ---------------------------------------------------------------------
    @property
    def input_tensors(self) -> TensorList:
        return TensorList(self.read_tensors(self.body))

    def read_tensors(self, body: tuple) -> list[Tensor]:
        reads = [t for t in _loaded(body) if t.op is not self]
        if self.prev is not None and all(t is not self.prev for t in reads):
            reads.insert(0, self.prev)
        return reads

    def storage(self, t: Tensor) -> Tensor:
        """The shared storage: the tensor written in place, else the last definition's output."""
        return self.base if self.base is not None else t

    @property
    def first(self) -> bool:
        """Whether this is the first definition (it reads no earlier one)."""
        return self.prev is None or self.prev.op.is_placeholder

    def overwrites(self) -> Tensor | None:
        in_place = self.base is not None and self.base.op.is_placeholder
        return self.base if self.first and in_place else None

    def reindex(self, iv: E.IterVar, x: E.PrimExpr) -> E.PrimExpr:
        k = next((k for k, a in enumerate(self.axis) if a is iv), None)
        if k is None or self.directions[k] > 0:
            return x
        return E.sub(E.add(E.add(iv.dom.min, iv.dom.min), E.sub(iv.dom.extent, 1)), x)

    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> DefinitionOp:
        """The recurrence rebuilt whole over ``tmap``'s tensors (a rewrite upstream of it: a
        cache_write or rfactor of what it reads), since its definitions share one storage and
        know each other; the other definitions' new tensors are added to ``tmap``, and a
        definition rebuilt with another is returned from there."""
        if self.outputs[0] in tmap:
            return tmap[self.outputs[0]].op
        if not any(t in tmap for t in self.input_tensors()):
            return self
        defs = [t.op for t in self.definitions] or [self]
        rw = _ReadRewriter(tmap)
        prev = defs[0].prev
        rebuilt: list[DefinitionOp] = []
        for d in defs:
            where = rw.visit(d.where) if d.where is not None else None
            prev = tmap.get(prev, prev) if prev is not None else None
            nd = DefinitionOp(d.name, d.tag, d.attrs, d.axis, [rw.visit(b) for b in d.body], where, prev, None,
                              d.directions, d.outputs[0])
            rebuilt.append(nd)
            prev = nd.outputs[0]
        in_place = self.base is not None and self.base.op.is_placeholder
        base = tmap.get(self.base, self.base) if in_place else rebuilt[-1].outputs[0]
        tensors = tuple(op.outputs[0] for op in rebuilt)
        for op in rebuilt:
            op.base, op.definitions = base, tensors
        for d, op in zip(defs, rebuilt):
            tmap[d.outputs[0]] = op.outputs[0]
        return tmap[self.outputs[0]].op

    def inline_refusal(self) -> str | None:
        return "a definition of a recurrence cannot be inlined (it reads its own earlier values)"

    # ---- InferBound: a definition computes all of its domain, reads all of the one before --
    def propagate_bounds(self, body: tuple, dom_map: dict, producer: Operation, analyzer: Analyzer) -> list[Request]:
        out = ComputeOp.propagate_bounds(self, body, dom_map, producer, analyzer)
        if self.prev is not None and self.prev.op is producer:
            out.append((self.prev, [IntSet.from_range(E.Range(0, n)) for n in self.prev.shape]))
        return out

    def gather_bound(self, stage, requests, analyzer: Analyzer) -> list[tuple[E.IterVar, E.Range]]:
        return [(iv, self.root_domain(stage, iv)) for iv in self.root_iter_vars]

    # ---- lowering --------------------------------------------------------------------------
    def build_provide(self, nest: LoopNest, stage, body: tuple) -> S.Stmt:
        """ComputeOp's nest, the indices of a backwards axis counted down from its end."""
        if stage.attach_type != "root":
            raise LowerError(
                f"definition {stage.name} of a recurrence was moved inside another stage's loop, but it must "
                f"run whole, after the definition before it; leave it at the root: s[{stage.name}].compute_root()")
        base = self.storage(self.outputs[0])
        if base.op.is_placeholder and _reads(body, base) > _reads(self.body, base):
            raise LowerError(
                f"definition {stage.name} writes {base.name} in place, but a stage inlined into it reads "
                f"{base.name} too, which would then see elements already overwritten; compute that stage before "
                f"the recurrence (s[...].compute_root()) instead of inlining it")
        return ComputeOp.build_provide(self, _Reindexed(nest, self), stage, body)

    def build_realize(self, stage, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
        """The first definition realizes the shared storage (unless it is an input written in
        place) around everything after it, in which every read and write of a definition's
        output is made one of the storage; the later definitions realize nothing."""
        if not self.first:
            return body
        base = self.storage(self.outputs[0])
        body = Redirect({t: base for t in self.definitions if t is not base}).visit(body)
        if base.op.is_placeholder:
            return body
        return S.ProducerRealize(base, tuple(E.Range(0, n) for n in base.shape), body, stage.scope)


def _reads(body, t: Tensor) -> int:
    return sum(1 for b in body for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad)) if ld.producer is t)


class _Reindexed:
    """The loop builder lent to ComputeOp's ``build_provide``, with the root axes that run
    backwards given their index (``reindex``) instead of the loop's count. Whatever the nest
    writes over those axes -- a reduction's range over ``i`` (``j in (i, n)``: back
    substitution), so its loops' bounds and the start its variable is rebased by -- is written
    over the index too: the count there would run the range of the mirrored point."""

    def __init__(self, nest: LoopNest, op: DefinitionOp):
        self._nest, self._op = nest, op
        self._back = [iv for iv in op.axis if op.reindex(iv, iv.var) is not iv.var]

    def __getattr__(self, name: str):
        return getattr(self._nest, name)

    def index_values(self, stage) -> dict[E.IterVar, E.PrimExpr]:
        value = self._nest.index_values(stage)
        return {iv: (self._op.reindex(iv, v) if iv in self._op.axis else v) for iv, v in value.items()}

    def bound_checks(self, stage, value: dict[E.IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
        loop = {iv: (self._op.reindex(iv, v) if iv in self._op.axis else v) for iv, v in value.items()}
        return self._nest.bound_checks(stage, loop)

    def _mirrored(self, stage, built: S.Stmt, inner: S.Stmt) -> S.Stmt:
        if not self._back:
            return built
        counts = self._nest.index_values(stage)
        pairs = [(counts[iv], self._op.reindex(iv, counts[iv])) for iv in self._back if iv in counts]
        return _MirrorBounds(pairs, inner).visit(built)

    def nest(self, stage, begin: int, end: int, body: S.Stmt) -> S.Stmt:
        return self._mirrored(stage, self._nest.nest(stage, begin, end, body), body)

    def init_nest(self, stage, loops, body: S.Stmt) -> S.Stmt:
        return self._mirrored(stage, self._nest.init_nest(stage, loops, body), body)


class _MirrorBounds(Mutator):
    """In the loops a nest built around ``inner`` (not in ``inner``, already written over the
    index), each occurrence of a backwards axis's count (``pairs``: the count as the nest writes
    it, and the index) in a loop's bounds or a rebased start replaced by the index."""

    def __init__(self, pairs: list[tuple[E.PrimExpr, E.PrimExpr]], inner: S.Stmt):
        self.pairs, self.inner = pairs, inner

    def visit(self, node):
        return node if node is self.inner else super().visit(node)

    def _expr(self, e: E.PrimExpr) -> E.PrimExpr:
        return _Replace(self.pairs).visit(e)

    def visit_For(self, s: S.For):
        body, lo, ext = self.visit(s.body), self._expr(s.min), self._expr(s.extent)
        if body is s.body and lo is s.min and ext is s.extent:
            return s
        return S.For(s.loop_var, lo, ext, s.kind, body, s.thread_tag)

    def visit_Binding(self, s: S.Binding):
        body, value = self.visit(s.body), self._expr(s.value)
        return s if body is s.body and value is s.value else S.Binding(s.var, value, body)


class _Replace(Mutator):
    """Each subexpression structurally equal to a pair's first replaced by its second."""

    def __init__(self, pairs: list[tuple[E.PrimExpr, E.PrimExpr]]):
        self.pairs = pairs

    def visit(self, node):
        if isinstance(node, E.PrimExpr):
            for old, new in self.pairs:
                if structural_equal(node, old):
                    return new
        return super().visit(node)


class _SelfRewriter(Mutator):
    def __init__(self, old: Tensor, new: Tensor):
        self.old, self.new = old, new

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        e = self.generic_visit(e)
        return E.ProducerLoad(self.new, e.indices) if e.producer is self.old else e


def _self_offsets(op: DefinitionOp) -> list[tuple[E.ProducerLoad, list[int | None]]]:
    """Each read of the definition's own tensor with, per axis, the sign of its index's offset
    from the axis (``_sign``); reads of the point itself are left out (they read the value the definitions
    before left there). An offset need not be a constant: ``x[j]`` under a sum over
    ``j in (i, n)`` reads later along ``i`` (back substitution), proved with the reduction's
    range and the definition's ``where``."""
    ana = Analyzer()
    for iv in op.axis:
        ana.bind(iv.var, iv.dom)
    for b in op.body:
        for red in collect(b, lambda n: isinstance(n, E.Reduce)):
            for k in red.axis:
                if k.dom is not None:
                    ana.bind(k.var, k.dom)
    if op.where is not None:
        ana.assume(op.where)
    me = op.outputs[0]
    out = []
    for b in op.body:
        for ld, guards in _guarded_loads(b, me):
            with ExitStack() as scope:
                for g in guards:
                    scope.enter_context(ana.constraint_scope(g))
                offs = [_sign(ana, ana.simplify(E.sub(idx, E.cast(iv.var, idx.dtype))))
                        for idx, iv in zip(ld.indices, op.axis)]
            if any(o != 0 for o in offs):
                out.append((ld, offs))
    return out


def _guarded_loads(e: E.PrimExpr, me: Tensor) -> list[tuple[E.ProducerLoad, tuple[E.PrimExpr, ...]]]:
    """The reads of ``me`` in ``e``, each with the conditions under which it is evaluated: a read
    under ``if_then_else(j < n - 1, y[min(j + 1, n - 1)], 0)`` happens only where ``j < n - 1``,
    so its clamp never bites and it reads later along ``j``."""
    out: list[tuple[E.ProducerLoad, tuple[E.PrimExpr, ...]]] = []

    def walk(n: object, guards: tuple[E.PrimExpr, ...]) -> None:
        if isinstance(n, E.ProducerLoad) and n.producer is me:
            out.append((n, guards))
        if isinstance(n, E.Reduce):  # its terms are read only where its condition holds
            for x in children(n):
                walk(x, (*guards, n.condition) if any(x is src for src in n.source) else guards)
            return
        if (isinstance(n, E.Call) and n.op == "if_then_else") or isinstance(n, E.Select):
            c, t, f = (n.args if isinstance(n, E.Call) else (n.condition, n.true_value, n.false_value))
            walk(c, guards)
            walk(t, (*guards, c))
            walk(f, (*guards, E.logical_not(c)))
            return
        for x in children(n):
            walk(x, guards)

    walk(e, ())
    return out


def _sign(ana: Analyzer, d: E.PrimExpr) -> int | None:
    """1 / -1: always later / earlier; 0: the same index; 2 / -2: later / earlier or the same
    (``h[min(i + 1, n - 1)]``); None: not known."""
    if isinstance(d, E.IntImm):
        return (d.value > 0) - (d.value < 0)
    zero = E.const(0, d.dtype)
    for sign, cond in ((1, E.gt(d, zero)), (-1, E.lt(d, zero)), (2, E.ge(d, zero)), (-2, E.le(d, zero))):
        if ana.can_prove(cond):
            return sign
    return None


def directions(op: DefinitionOp, shown: str) -> list[int]:
    """Per axis, +1 (forwards) or -1: outermost first, an axis runs backwards when the reads
    not yet ordered by an outer axis read later indices along it; refused when some read
    earlier and others later ones (no order computes both first). A read whose offset's sign
    is not known leaves the rest forwards; the build checks the order exactly."""
    pending = _self_offsets(op)
    out = []
    for k, iv in enumerate(op.axis):
        if any(offs[k] is None for _, offs in pending):
            out.extend([1] * (len(op.axis) - k))  # not uniform: forwards, checked exactly at build time
            break
        later = [ld for ld, offs in pending if offs[k] in (1, 2)]
        earlier = [ld for ld, offs in pending if offs[k] in (-1, -2)]
        if later and earlier:
            raise DefinitionError(
                f"te.recurrence {shown}: it reads {_text(earlier[0])} and {_text(later[0])}, an earlier and a later "
                f"index along axis {iv.var.name} of the points it is defining, so no direction of loop "
                f"{iv.var.name} computes both before they are read; write the new values into another tensor "
                "(te.compute) or read only one side")
        out.append(-1 if later else 1)
        pending = [(ld, offs) for ld, offs in pending if offs[k] in (0, 2, -2)]  # the same index here: inner axes order it
    return out


def _text(ld: E.ProducerLoad) -> str:
    return f"{ld.producer.name}[{', '.join(str(i) for i in ld.indices)}]"


def _one_definition(d: Definition, k: int, shape, name: str, dtype, prev: Tensor | None, final: bool,
                    tag: str, attrs) -> DefinitionOp:
    """Definition ``k`` as an operation: its axes, its body read through its own tensor."""
    dname = name if final else (d.name or f"{name}.def{k}")
    names = [f"i{k}" for k in range(len(shape))] if _takes_varargs(d.fcompute) else _def_names(d.fcompute, shape, dname)
    axis = [E.IterVar(E.Range(0, n), E.Var(a, n.dtype), E.IterVar.DATA_PAR) for a, n in zip(names, shape)]
    where = domain_condition(d.where, axis, dname) if d.where is not None else None
    op = DefinitionOp.__new__(DefinitionOp)  # the tensor the body reads, before the operation is complete
    op.name = dname
    op.outputs = (Tensor(op, 0, shape, dtype),)
    probe = op.outputs[0]
    value = E.convert(d.fcompute(probe, *[iv.var for iv in axis]))
    if value.dtype != dtype:
        if value.dtype.is_float == dtype.is_float and isinstance(value, E.IntImm | E.FloatImm):
            value = E.cast(value, dtype)
        else:
            raise DefinitionError(f"te.recurrence {name}: definition {k} gives `{value}` of dtype {value.dtype}, but "
                                  f"the tensor is {dtype}; cast it (.astype(\"{dtype}\"))")
    value = finished_reduction(dname, value)
    _check_body(dname, [value])
    _finish_reads_no_point(value, probe, axis, name)
    out = DefinitionOp(dname, tag, attrs, axis, [value], where, prev, None, [1] * len(axis), probe)
    out.directions = tuple(directions(out, f"{name} (definition {k})"))
    return out


def _finish_reads_no_point(value: E.PrimExpr, me: Tensor, axis, name: str) -> None:
    """A finished reduction is accumulated in its point, so the finish reading the point itself
    would read the partial value, not the one the definitions before left there; that value is
    the reduction's start instead (``init=``)."""
    if not isinstance(value, E.Reduce) or value.finish is None:
        return
    at = [iv.var for iv in axis]
    for ld in collect(value.finish, lambda n: isinstance(n, E.ProducerLoad) and n.producer is me):
        if all(structural_equal(i, v) for i, v in zip(ld.indices, at)):
            raise DefinitionError(
                f"te.recurrence {name}: `{value.finish}` reads {_text(ld)}, the point its reduction is accumulated "
                f"in, so it would see the partial sum; start the reduction from that value instead "
                f"(te.sum(..., init={_text(ld)})) and finish it without it")


def _takes_varargs(f: Callable) -> bool:
    import inspect

    try:
        ps = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return False
    return len(ps) == 2 and ps[1].kind == inspect.Parameter.VAR_POSITIONAL


def _def_names(f: Callable, shape, name: str) -> list[str]:
    """The index names a definition's function gives (after its first argument, the tensor)."""
    import inspect

    try:
        ps = [p for p in inspect.signature(f).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        ps = []
    if len(ps) != len(shape) + 1:
        raise DefinitionError(
            f"te.recurrence {name}: a definition's function takes the tensor being defined, then one index per "
            f"dimension ({len(shape) + 1} arguments, e.g. lambda h, {', '.join(f'i{k}' for k in range(len(shape)))}: ...), "
            f"got {len(ps)}")
    return [p.name for p in ps[1:]]


def recurrence(shape, definitions: Sequence[Definition | Callable], name: str = "recurrence", dtype=None,
               inplace: Tensor | None = None, tag: str = "", attrs: dict | None = None) -> Tensor:
    """A tensor defined by ``definitions`` run in order, each reading the tensor as the earlier
    ones (and its own earlier points) left it; see the module's docstring. ``inplace``: an
    input (te.placeholder) whose storage holds the result, its content being the starting
    values (the kernel then takes it alone: ``build(s, [..., inplace])``). Returns the tensor
    (its operation is the last definition; ``h.op.definitions`` lists all of them)."""
    if isinstance(definitions, Definition) or callable(definitions) or not isinstance(definitions, Sequence):
        raise DefinitionError(f"te.recurrence {name}: definitions must be a list of te.define(...) (or functions "
                              f"h, i, ... -> value), in the order they run; got {type(definitions).__name__} "
                              "(wrap a single definition in a list: [te.define(...)])")
    defs = [d if isinstance(d, Definition) else define(d) for d in definitions]
    if not defs:
        raise DefinitionError(f"te.recurrence {name}: give at least one definition (te.define(...))")
    if inplace is not None:
        if not isinstance(inplace, Tensor) or not inplace.op.is_placeholder:
            raise DefinitionError(f"te.recurrence {name}: inplace= must be an input (a te.placeholder) whose "
                                  f"storage the results are written into, got {inplace!r}")
        shape = inplace.shape if shape is None else shape
    shape = _check_shape(shape, name)
    if inplace is not None:
        ana = Analyzer()
        if len(inplace.shape) != len(shape) or not all(ana.can_prove_equal(a, b) for a, b in zip(inplace.shape, shape)):
            raise DefinitionError(f"te.recurrence {name}: its shape {shape} is not the shape {inplace.shape} of "
                                  f"{inplace.name}, the input it is written into")
    dt = to_dtype(dtype) if dtype is not None else (inplace.dtype if inplace is not None else _probe_dtype(defs[0], shape, name))
    ops: list[DefinitionOp] = []
    prev = inplace
    for k, d in enumerate(defs):
        op = _one_definition(d, k, shape, name, dt, prev, k == len(defs) - 1, tag, attrs)
        ops.append(op)
        prev = op.outputs[0]
    base = inplace if inplace is not None else ops[-1].outputs[0]
    tensors = tuple(op.outputs[0] for op in ops)
    for op in ops:
        op.base, op.definitions = base, tensors
    return ops[-1].outputs[0]


def _probe_dtype(d: Definition, shape, name: str) -> object:
    """The dtype of the first definition's values, found as a fixed point: the tensor's reads
    of itself are taken as float32, then as the dtype its values came out in, until the two
    agree. A reduction's values include its ``init`` (the value it starts from is a value of
    the tensor): ``sum(h[i, k] * h[k, j], init=A[i, j])`` with a float64 ``A`` is float64, not
    the float32 of a first guess (issue 29, defect 8). The first guess is the dtype of the other
    tensors it reads where they agree on one integer dtype (floyd-warshall's ``min`` of int32
    paths stays int32, where a float32 guess settled at float32), float32 otherwise."""
    from .tensor import placeholder

    names = _def_names(d.fcompute, shape, name) if not _takes_varargs(d.fcompute) else [f"i{k}" for k in range(len(shape))]
    axes = [E.Var(n, s.dtype) for n, s in zip(names, shape)]
    first = to_dtype("float32")
    probe = placeholder(shape, first, "probe")
    others = {x.producer.dtype for x in collect(E.convert(d.fcompute(probe, *axes)), lambda n: isinstance(n, E.ProducerLoad))
              if x.producer is not probe}
    if len(others) == 1 and others == {x for x in others if x.is_integer}:
        first = others.pop()  # the values it reads besides its own are of one integer dtype: its own too, if that settles
    dt, seen = first, []
    while dt not in seen:
        seen.append(dt)
        value = E.convert(d.fcompute(placeholder(shape, dt, "probe"), *axes))
        got = value
        for r in collect(value, lambda n: isinstance(n, E.Reduce)):
            for init in r.init:  # as given, before the reduction cast it to its source's dtype
                given = init.value if isinstance(init, E.Cast) else init
                got = E.add(got, given)  # the promotion any binary operation of the two applies
        if got.dtype == dt:
            return dt
        dt = got.dtype
    raise DefinitionError(f"te.recurrence {name}: the dtype of its values does not settle ({' -> '.join(map(str, seen))}, "
                          f"depending on the dtype its reads of itself are taken in); give it: dtype=...")


__all__ = ["Definition", "DefinitionOp", "define", "recurrence"]


# ---- te objects in IR documents (tessel.ir.save_json) -------------------------------------------
def _encode(op: DefinitionOp) -> list:
    """A definition without cycles: its reads of itself as reads of a stand-in placeholder
    (rebuilt into reads of its own output), the storage and the list of definitions left to
    the last definition's decoding (which walks the chain back)."""
    from .tensor import placeholder

    me = op.outputs[0]
    stand_in = placeholder(me.shape, me.dtype, me.name)
    rw = _SelfRewriter(me, stand_in)
    base = op.base if op.base is not None and op.base.op.is_placeholder else None
    last = bool(op.definitions) and op.definitions[-1] is me
    return [op.name, op.tag, [[k, v] for k, v in sorted(op.attrs.items())], op.axis,
            [rw.visit(b) for b in op.body], op.where, op.prev, base, list(op.directions), stand_in, last]


def _decode(f) -> DefinitionOp:
    name, tag, attrs, axis, body, where, prev, base, dirs, stand_in, last = f
    op = DefinitionOp(str(name), str(tag), {str(k): v for k, v in attrs}, axis, body, where, prev, None,
                      [int(d) for d in dirs], stand_in)
    if last:
        chain = [op]
        while chain[0].prev is not None and isinstance(chain[0].prev.op, DefinitionOp):
            chain.insert(0, chain[0].prev.op)
        storage = base if base is not None else op.outputs[0]
        for d in chain:
            d.base, d.definitions = storage, tuple(c.outputs[0] for c in chain)
    return op


register("te.DefinitionOp", DefinitionOp, _encode, _decode)
