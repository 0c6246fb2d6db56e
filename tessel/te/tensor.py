"""Tensors and the two built-in operations that produce them: placeholders and computes.

An :class:`Operation` says *what* is computed; a :class:`Tensor` is one of its outputs. What
every operation must answer (its bounds, its loop nest) is the interface in ``operation.py``;
:class:`ComputeOp` answers it from its body: every read is a ``ProducerLoad`` in it.
Indexing a tensor builds a :class:`~tessel.ir.ProducerLoad` and checks the number of indices
right away, so a wrong program fails where it is written, not deep inside lowering.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence

from ..arith import Analyzer, IntSet, eval_set, union
from ..errors import DefinitionError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DType, DTypeLike
from ..ir.dtype import dtype as to_dtype
from ..ir.expr import convert
from ..ir.functor import Mutator, collect, free_vars, ir_transform, substitute
from ..ir.serialize import register
from ..ir.stmt import LoopKind
from .operation import LoopNest, Operation, Request, TensorList
from .tag import scoped_tag


def _whole(fn: Callable, name: str) -> tuple[Callable, Callable]:
    """An operator on whole tensors and its reflection (see ``broadcast_op``)."""
    return (lambda self, o: broadcast_op(fn, self, o, name)), (lambda self, o: broadcast_op(fn, o, self, name))


class Tensor:
    """The ``value_index``-th output of ``op``; ``shape`` and ``dtype`` are fixed at definition."""

    __slots__ = ("dtype", "op", "shape", "value_index")

    def __init__(self, op: Operation, value_index: int, shape: Sequence[E.PrimExpr], dtype: DType):
        self.op = op
        self.value_index = value_index
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def name(self) -> str:
        return self.op.name if self.op.num_outputs == 1 else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> E.ProducerLoad | TensorSlice:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) < self.ndim or any(isinstance(x, slice) for x in indices):
            # TVM's A[i][j] (the rest of the indices follow), or a region A[i, 0:16] (an
            # intrinsic's argument: te/tensor_compute.py)
            return TensorSlice(self, indices)
        return self._load(indices)

    def _load(self, indices: tuple) -> E.ProducerLoad:
        if len(indices) != self.ndim:
            raise DefinitionError(
                f"tensor {self.name} has {self.ndim} dimension(s) (shape {_shape_text(self.shape)}) "
                f"but was indexed with {len(indices)} index(es): write {self.name}[{', '.join(f'i{k}' for k in range(self.ndim))}]"
            )
        conv = []
        for k, x in enumerate(indices):
            if isinstance(x, slice):
                raise DefinitionError(f"{self.name}[...]: dimension {k} is a slice, which names a region: only a "
                                      "tensor intrinsic's call takes one (intrin(A[i, 0:16])); index one element")
            e = convert(x)
            if not (e.dtype.is_integer and e.dtype.lanes == 1):
                raise DefinitionError(f"index {k} of {self.name} is `{e}` of dtype {e.dtype}; indices must be integers")
            conv.append(e)
        return E.ProducerLoad(self, conv)

    def __call__(self, *indices) -> E.ProducerLoad:
        return self._load(indices)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, shape={_shape_text(self.shape)}, dtype={self.dtype})"

    def __len__(self) -> int:
        raise DefinitionError(f"len() of tensor {self.name} is not defined; use {self.name}.shape")

    def __iter__(self):
        raise DefinitionError(f"tensor {self.name} cannot be iterated; index it with {self.name}[...]")

    # arithmetic on whole tensors (TVM's Tensor operators): a new stage, see ``broadcast_op``
    __tessel_defers__ = True  # ``n + A`` with ``n`` an expression is this tensor's to build

    __add__, __radd__ = _whole(E.add, "add")
    __sub__, __rsub__ = _whole(E.sub, "subtract")
    __mul__, __rmul__ = _whole(E.mul, "multiply")
    __truediv__, __rtruediv__ = _whole(E.true_div, "divide")


class TensorSlice(E.ExprOp):
    """``A[i]`` of a tensor with more dimensions: TVM's way of writing ``A[i, j]`` as ``A[i][j]``.

    Indexing it again adds indices; with all of them it is the load ``A[i, j]``. Used in an
    expression before it is complete, it is refused with the tensor's index-count message.
    """

    __slots__ = ("indices", "tensor")

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices = tensor, tuple(indices)

    def __getitem__(self, indices) -> E.ProducerLoad | TensorSlice:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self.tensor[self.indices + indices]

    def asobject(self) -> E.ProducerLoad:
        """The load this slice stands for (refused while indices are missing)."""
        return self.tensor._load(self.indices)

    @property
    def dtype(self) -> DType:
        return self.tensor.dtype

    def __repr__(self) -> str:
        return f"TensorSlice({self.tensor.name}, {len(self.indices)} of {self.tensor.ndim} indices)"


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class PlaceholderOp(Operation):
    """An input of the kernel: its data come from the caller, so it has no loops of its own."""

    is_placeholder = True

    def __init__(self, name: str, shape, dtype: DType):
        self.name, self.tag, self.attrs = name, "", {}
        self.shape = tuple(shape)
        self.dtype = dtype
        self.outputs = (Tensor(self, 0, self.shape, dtype),)


class ComputeOp(Operation):
    """``out[axis] = body`` for every point of ``axis``; a body may be a top-level Reduce."""

    def __init__(self, name: str, tag: str, attrs: dict | None, axis, body, where: E.PrimExpr | None = None):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis = tuple(axis)
        self.body = tuple(body)
        self.where = where
        first = self.body[0]
        self.reduce_axis = first.axis if isinstance(first, E.Reduce) else ()
        shape = tuple(iv.dom.extent if iv.dom is not None else None for iv in self.axis)  # None: inferred
        self.outputs = tuple(Tensor(self, k, shape, b.dtype) for k, b in enumerate(self.body))

    @property
    def root_iter_vars(self) -> tuple[E.IterVar, ...]:
        return self.axis + self.reduce_axis

    @property
    def input_tensors(self) -> TensorList:
        return TensorList(_loaded(self.body))

    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> ComputeOp:
        """The same computation over the same IterVars, reading ``tmap[t]`` wherever it read ``t``."""
        if not any(t in tmap for t in self.input_tensors()):
            return self
        rw = _ReadRewriter(tmap)
        where = rw.visit(self.where) if self.where is not None else None
        return ComputeOp(self.name, self.tag, self.attrs, self.axis, [rw.visit(b) for b in self.body], where)

    def inline_refusal(self) -> str | None:
        if self.is_reduction:
            return ("a reduction cannot be inlined (its value needs a loop); "
                    "use compute_at to place it inside its reader instead")
        if self.num_outputs > 1:
            return "an operation with several outputs cannot be inlined"
        if self.where is not None:
            return ("a compute with a declared domain (where=) cannot be inlined: its readers would need "
                    "its values outside the domain too; compute_at places it inside its reader instead")
        return None

    # ---- InferBound (seed 000): every read is a ProducerLoad of the body ----------------------
    def effective_body(self, inline: Callable[[E.PrimExpr], E.PrimExpr]) -> tuple[E.PrimExpr, ...]:
        return tuple(inline(b) for b in self.body)

    def read_tensors(self, body: tuple) -> list[Tensor]:
        return _loaded(body)

    def propagate_bounds(self, body: tuple, dom_map: dict, producer: Operation, analyzer: Analyzer) -> list[Request]:
        return [(load.producer, [eval_set(idx, dom_map) for idx in load.indices])
                for load in _loads(body) if load.producer.op is producer]

    def gather_bound(self, stage, requests: Sequence[Request], analyzer: Analyzer) -> list[tuple[E.IterVar, E.Range]]:
        return gather_axes(self, stage, requests, analyzer)

    # ---- lowering: ``out[axis] = body``, or a reduction's init and update ------------------------
    def build_provide(self, nest: LoopNest, stage, body: tuple) -> S.Stmt:
        intrin = next((stage.iter_var_attrs[iv].tensor_intrin for iv in stage.leaf_iter_vars
                       if stage.leaf_kind(iv) == LoopKind.TENSORIZED), None)
        if intrin is not None:
            return intrin.lower_into(self, nest, stage, body)
        value = nest.index_values(stage)
        roots = {iv.var: value[iv] for iv in self.root_iter_vars}
        idx = [value[iv] for iv in self.axis]
        preds = nest.bound_checks(stage, value)
        if not self.is_reduction:
            stores = [S.ProducerStore(t, substitute(b, roots), idx) for t, b in zip(self.outputs, body)]
            return nest.nest(stage, 0, len(stage.leaf_iter_vars), nest.guarded(preds, S.seq(*stores)))
        return _build_reduction(self, nest, stage, body[0], roots, idx, preds)

    def build_realize(self, stage, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
        return realize_axes(self, stage, rmap, body)


def gather_axes(op: Operation, stage, requests: Sequence[Request], analyzer: Analyzer) -> list[tuple[E.IterVar, E.Range]]:
    """Reduction loops run whole; each axis covers the union of the requests of its dimension
    (dimension-wise, the over-approximation seed 000 names): a compute's bounds, and those of
    any operation with data-parallel ``axis`` and ``reduce_axis``."""
    out = [(iv, op.root_domain(stage, iv)) for iv in op.reduce_axis]
    per_dim: list[list[IntSet]] = [[] for _ in op.axis]
    for _, sets in requests:
        for j, s in enumerate(sets):
            per_dim[j].append(s)
    for iv, sets in zip(op.axis, per_dim):
        if not sets:
            out.append((iv, iv.dom))
            continue
        r = union(sets).cover_range(iv.dom)
        out.append((iv, E.Range(analyzer.simplify(r.min), analyzer.simplify(r.extent))))
    return out


def realize_axes(op: Operation, stage, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
    """Each output stored over the region InferBound found for the axes."""
    bounds = tuple(rmap[iv] for iv in op.axis)
    for t in reversed(op.outputs):
        body = S.ProducerRealize(t, bounds, body, stage.scope)
    return body


def _build_reduction(op: ComputeOp, nest: LoopNest, stage, red: E.Reduce, roots, idx, preds, begin: int = 0) -> S.Stmt:
    """Init over the data-parallel loops inside the first reduction loop, then the update
    (over leaf loops ``begin`` on: a tensorized stage's scalar edge starts inside the tile)."""
    leaves = stage.leaf_iter_vars
    first = next((k for k, iv in enumerate(leaves) if iv.is_reduce and k >= begin), len(leaves))
    # init: over the loops inside the first reduction loop that reach an output axis (a loop
    # fusing a data-parallel with a reduction axis is one; it initialises an element once per
    # reduction step, as TVM's init nest does)
    data_vars: set[E.Var] = set()
    for i in idx:
        data_vars |= free_vars(i)
    loops = [iv for iv in leaves[first:] if iv.var in data_vars]
    init = reduction_init(op, nest, stage, red, idx, preds, loops, roots)
    across_threads = any(iv.is_reduce and stage.leaf_kind(iv) == LoopKind.THREAD_BINDING for iv in leaves)
    update = reduction_update(op, red, roots, idx, operands=across_threads)
    update = nest.nest(stage, first, len(leaves), nest.guarded(preds, update))
    if red.finish is None and first < len(leaves) and nest.hoists_init(stage, first):  # its reduction loop is a host's: the init runs outside it
        nest.hoist_init(stage, init)
        return nest.nest(stage, begin, first, update)
    if red.finish is None:
        return nest.nest(stage, begin, first, S.seq(init, update))
    finish = reduction_finish(op, nest, stage, red, idx, preds, loops, roots)
    return nest.nest(stage, begin, first, S.seq(init, update, finish))


def reduction_init(op: ComputeOp, nest: LoopNest, stage, red: E.Reduce, idx, preds, loops, roots) -> S.Stmt:
    """The outputs set to the reduction's start over the leaf ``loops`` that reach an output
    axis (fresh variables: the update's loops of the same IterVars run apart from them); an
    init (``init=``) is written in the root axes, which ``roots`` gives in the leaf loops."""
    skipped = _reduction_loop_vars(nest, stage, loops)
    fresh = {iv.var: E.Var(iv.var.name, iv.var.dtype) for iv in loops}
    init_vals = tuple(substitute(v, roots) for v in red.init) if red.init else red.combiner.identity
    init_preds = [p for p in preds if not (free_vars(p) & skipped)]
    init: S.Stmt = nest.guarded(init_preds, S.seq(*[S.ProducerStore(t, v, idx) for t, v in zip(op.outputs, init_vals)]))
    return substitute(nest.init_nest(stage, loops, init), fresh)


def reduction_finish(op: ComputeOp, nest: LoopNest, stage, red: E.Reduce, idx, preds, loops, roots) -> S.Stmt:
    """The reduced value finished (``red.finish``) over the same loops as the init, once the
    update's loops are done: the solvers' ``(A[i, j] - sum) / d`` in one definition."""
    skipped = _reduction_loop_vars(nest, stage, loops)
    fresh = {iv.var: E.Var(iv.var.name, iv.var.dtype) for iv in loops}
    store = S.ProducerStore(op.outputs[0], finished_value(op, red, roots, idx), idx)
    body: S.Stmt = nest.guarded([p for p in preds if not (free_vars(p) & skipped)], store)
    return substitute(nest.init_nest(stage, loops, body), fresh)


def _reduction_loop_vars(nest: LoopNest, stage, loops) -> set[E.Var]:
    """The variables of the reduction loops the init does not run in: its own, or the host's
    loops it shares (``Placement.shared``), whose guards cannot be tested outside them."""
    value = nest.index_values(stage)
    out: set[E.Var] = set()
    for iv in stage.leaf_iter_vars:
        if iv.is_reduce and iv not in loops:
            out |= {iv.var} | free_vars(value.get(iv, iv.var))
    return out


def finished_value(op: ComputeOp, red: E.Reduce, roots, idx) -> E.PrimExpr:
    """``red.finish`` at one point: the reduced value read where it was accumulated."""
    return substitute(red.finish, {**roots, red.acc: E.ProducerLoad(op.outputs[0], idx)})


def reduction_update(op: ComputeOp, red: E.Reduce, roots, idx, operands: bool = False) -> S.Stmt:
    """``acc = combine(acc, source)`` under the reduction's ``where``. A tuple's new values are
    bound first (each combines all of the old ones); with ``operands`` its sources are bound
    before them, so that a cross-thread reduction can tell the thread's operand from the
    combiner (``passes/gpu/allreduce.py``: 2n lets, then the n stores)."""
    outs = op.outputs
    src = tuple(substitute(s, roots) for s in red.source)
    acc = tuple(E.ProducerLoad(t, idx) for t in outs)
    comb = red.combiner
    ops = [E.Var(f"{t.name}_r", t.dtype) for t in outs] if operands and len(outs) > 1 else []
    vmap = dict(zip(comb.lhs, acc)) | dict(zip(comb.rhs, ops or src))
    new = tuple(substitute(r, vmap) for r in comb.result)
    if len(outs) == 1:
        update: S.Stmt = S.ProducerStore(outs[0], new[0], idx)
    else:
        tmps = [E.Var(f"{t.name}_v", t.dtype) for t in outs]
        update = S.seq(*[S.ProducerStore(t, v, idx) for t, v in zip(outs, tmps)])
        for v, e in reversed([*zip(ops, src), *zip(tmps, new)]):
            update = S.LetStmt(v, e, update)
    cond = substitute(red.condition, roots)
    if not (isinstance(cond, E.IntImm) and cond.value):
        update = S.IfThenElse(cond, update)
    return update


def _loads(body) -> list[E.ProducerLoad]:
    out: list[E.ProducerLoad] = []
    for b in body:
        out.extend(collect(b, lambda n: isinstance(n, E.ProducerLoad)))
    return out


def _loaded(body) -> list[Tensor]:
    seen: dict[int, Tensor] = {}
    for load in _loads(body):
        seen.setdefault(id(load.producer), load.producer)
    return list(seen.values())


class _ReadRewriter(Mutator):
    """Re-points reads of the tensors in ``tmap``.

    Memoized by node identity so that the source shared by the outputs of a multi-output
    reduction is rewritten once and stays shared.
    """

    def __init__(self, tmap: dict[Tensor, Tensor]):
        self.tmap = tmap
        self.memo: dict[int, object] = {}

    def visit(self, node):
        key = id(node)
        if key not in self.memo:
            self.memo[key] = super().visit(node)
        return self.memo[key]

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = tuple(self.visit(i) for i in e.indices)
        t = self.tmap.get(e.producer, e.producer)
        if t is e.producer and all(a is b for a, b in zip(idx, e.indices)):
            return e
        return E.ProducerLoad(t, idx)


def placeholder(shape, dtype: DTypeLike = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the given shape (ints or symbolic ``te.var`` sizes)."""
    shape = _check_shape(shape, name)
    return PlaceholderOp(name, shape, to_dtype(dtype)).output(0)


def _check_shape(shape, name: str) -> tuple[E.PrimExpr, ...]:
    """The sizes as integer expressions. A float that is a whole number is taken as that integer:
    TVM's tutorials write ``N / bn``, which Python 3 makes a float (TVM truncates any float; a
    fractional one is refused here instead, since no tensor has half a row)."""
    if isinstance(shape, int | float | E.PrimExpr):
        shape = (shape,)
    out = []
    for k, s in enumerate(shape):
        e = convert(s)
        if isinstance(e, E.FloatImm) and math.isfinite(e.value) and float(e.value).is_integer():
            e = convert(int(e.value))
        if not e.dtype.is_integer:
            raise DefinitionError(f"dimension {k} of {name} is `{e}` of dtype {e.dtype}; sizes must be integers")
        if isinstance(e, E.IntImm) and e.value < 0:
            raise DefinitionError(f"dimension {k} of {name} is {e.value}; sizes must not be negative")
        out.append(e)
    return tuple(out)


def _axis_names(fcompute: Callable, ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        return [f"i{k}" for k in range(ndim)]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) != ndim:
        raise DefinitionError(
            f"compute of shape with {ndim} dimension(s) was given a function of {len(names)} argument(s); "
            f"it needs one index argument per dimension"
        )
    return names


def compute(shape, fcompute: Callable, name: str = "compute", tag: str = "", attrs: dict | None = None,
            where: Callable | None = None):
    """Define ``name[i, j, ...] = fcompute(i, j, ...)`` over ``shape``.

    ``fcompute`` may return a tuple: the operation then has several outputs of one shape (for
    a tuple reduction such as argmax all parts must be reductions over the same axes).
    ``where(i, j, ...)``, a condition, declares a domain smaller than the shape (``j < i``, a
    band ``te.abs(i - j) <= w``): only its points are computed, by loops whose bounds follow
    it (isl), and elements outside it are left as the storage holds them (see
    docs/polyhedral.md, "Domains and recurrences"). ``shape=None`` leaves the shape to be
    inferred from the readers when a schedule is made (``te/domain.py``).
    """
    if shape is None:  # undeclared: one dimension per argument, sized from its readers (te/domain.py)
        names = _axis_names(fcompute, _arity(fcompute, name))
        axis = [E.IterVar(None, E.Var(n, "int32"), E.IterVar.DATA_PAR) for n in names]
    else:
        shape = _check_shape(shape, name)
        names = _intrinsic_call_names(fcompute, len(shape)) or _axis_names(fcompute, len(shape))
        axis = [E.IterVar(E.Range(0, s), E.Var(n, s.dtype), E.IterVar.DATA_PAR) for n, s in zip(names, shape)]
    result = fcompute(*[iv.var for iv in axis])
    if getattr(type(result), "is_intrinsic_call", False):  # intrin(A[i, 0:16]): te/tensor_compute.py,
        op = result.operation(name, scoped_tag(tag, name), attrs, axis, shape)  # which builds on this module
        return op.outputs if len(op.outputs) > 1 else op.outputs[0]
    if len(axis) != len(shape or axis):
        _axis_names(fcompute, len(shape))  # refused: one argument per dimension
    bodies = list(result) if isinstance(result, list | tuple) else [result]
    bodies = [finished_reduction(name, convert(b)) for b in bodies]
    _check_body(name, bodies)
    cond = domain_condition(where, axis, name) if where is not None else None
    op = ComputeOp(name, scoped_tag(tag, name), attrs, axis, bodies, cond)
    return op.outputs if len(op.outputs) > 1 else op.outputs[0]


def _intrinsic_call_names(fcompute: Callable, ndim: int) -> list[str] | None:
    """The arguments of a function naming fewer axes than ``ndim`` (a tensor intrinsic's call
    covers the rest: ``lambda i: vadd(A[i, 0:16], ...)``), else None."""
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) or len(params) >= ndim:
        return None
    return [p.name for p in params]


def _arity(fcompute: Callable, name: str) -> int:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if not params or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise DefinitionError(f"compute {name}: with no shape (None), its function must name one argument per "
                              "dimension (lambda i, j: ...), from which the number of dimensions is taken")
    return len(params)


def domain_condition(where, axis, name: str) -> E.PrimExpr:
    """``where`` (a function of the indices, or a condition already) as a boolean expression
    over ``axis``; refused when it is not a condition or reads a tensor."""
    cond = convert(where(*[iv.var for iv in axis]) if callable(where) else where)
    if not cond.dtype.is_bool:
        raise DefinitionError(f"compute {name}: where= must give a condition over the indices (e.g. "
                              f"`lambda i, j: j < i`), got `{cond}` of dtype {cond.dtype}")
    if collect(cond, lambda n: isinstance(n, E.ProducerLoad | E.Reduce)):
        raise DefinitionError(f"compute {name}: where= must not read a tensor or reduce (`{cond}`); a domain "
                              "is decided from the indices and the sizes; use te.if_then_else in the body for a "
                              "condition on data")
    return cond


def finished_reduction(name: str, body: E.PrimExpr) -> E.PrimExpr:
    """``f(reduction)`` -- the solvers' ``(A[i, j] - sum) / d``, ``sqrt(sum)`` -- as the reduction
    with ``f`` as its ``finish``: the value is accumulated in the output, then finished once
    the reduction is complete (a body of one reduction of one value, of the body's dtype)."""
    nested = list({id(r): r for r in collect(body, lambda n: isinstance(n, E.Reduce))}.values())  # once each
    if isinstance(body, E.Reduce) or len(nested) != 1 or len(nested[0].source) != 1 or nested[0].finish is not None:
        return body
    red = nested[0]
    if red.dtype != body.dtype:
        raise DefinitionError(
            f"compute {name}: the value `{body}` is {body.dtype}, the reduction inside it {red.dtype}; the "
            f"reduction is accumulated where the value is stored, so give it the value's dtype "
            f"(.astype(\"{body.dtype}\") on what it sums)")
    acc = E.Var(f"{red.combiner.name}_value", red.dtype)
    finish = ir_transform(body, None, lambda n: acc if n is red else None)
    return E.Reduce(red.combiner, red.source, red.axis, red.condition, red.value_index, red.init, finish, acc)


def _check_body(name: str, bodies: list[E.PrimExpr]) -> None:
    for b in bodies:
        nested = [n for n in collect(b, lambda n: isinstance(n, E.Reduce)) if n is not b]
        if nested or (not isinstance(b, E.Reduce) and collect(b, lambda n: isinstance(n, E.Reduce))):
            raise DefinitionError(
                f"compute {name}: a reduction (te.sum/min/max or a comm_reducer) must be the whole "
                "body of a compute, or one reduction of one value inside an expression of it "
                "((A[i, j] - te.sum(...)) / d); compute the others in a te.compute of their own and use "
                "their results"
            )
    reds = [b for b in bodies if isinstance(b, E.Reduce)]
    if reds and len(reds) != len(bodies):
        raise DefinitionError(f"compute {name}: either every output or none must be a reduction")
    if len(reds) > 1:
        first = reds[0]
        for r in reds[1:]:
            if r.combiner is not first.combiner or r.axis != first.axis or r.source != first.source:
                raise DefinitionError(
                    f"compute {name}: the outputs of a multi-output reduction must come from one "
                    "comm_reducer call over the same axes"
                )


# ---- te objects in IR documents (tessel.ir.save_json) -------------------------------------------
def _attrs_of(pairs) -> dict:
    return {str(k): v for k, v in pairs}


register("te.Tensor", Tensor, lambda t: [t.op, t.value_index], lambda f: f[0].output(f[1]))
register("te.PlaceholderOp", PlaceholderOp, lambda op: [op.name, op.shape, op.dtype],
         lambda f: PlaceholderOp(str(f[0]), tuple(f[1]), to_dtype(f[2])))
register("te.ComputeOp", ComputeOp,
         lambda op: [op.name, op.tag, [[k, v] for k, v in sorted(op.attrs.items())], op.axis, op.body,
                     *([op.where] if op.where is not None else [])],
         lambda f: ComputeOp(str(f[0]), str(f[1]), _attrs_of(f[2]), f[3], f[4], f[5] if len(f) > 5 else None))


# ---- arithmetic on whole tensors ---------------------------------------------------------
def _is_one(d) -> bool:
    return isinstance(d, E.IntImm) and d.value == 1


def broadcast_shape(a: Sequence, b: Sequence) -> tuple:
    """NumPy's broadcast of two shapes (aligned on the right; a dimension of 1 stretches)."""
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        x = a[-k] if k <= len(a) else E.IntImm(1, "int32")
        y = b[-k] if k <= len(b) else E.IntImm(1, "int32")
        if _is_one(x):
            out.append(y)
        elif _is_one(y) or x is y or (isinstance(x, E.IntImm) and isinstance(y, E.IntImm) and x.value == y.value):
            out.append(x)
        elif isinstance(x, E.IntImm) and isinstance(y, E.IntImm):
            raise DefinitionError(f"shapes {list(a)} and {list(b)} do not broadcast (dimension -{k}: "
                                  f"{x.value} and {y.value})")
        else:
            out.append(x)  # two symbolic sizes: taken to be equal, as TVM does
    return tuple(reversed(out))


def _at(t, idx: tuple):
    """``t`` read at output index ``idx`` under broadcasting (a scalar is itself)."""
    if not isinstance(t, Tensor):
        return t
    own = idx[len(idx) - len(t.shape):]
    return t[tuple(E.IntImm(0, i.dtype) if _is_one(d) else i for d, i in zip(t.shape, own))]


def broadcast_op(fn: Callable, lhs, rhs, name: str) -> Tensor | E.PrimExpr:
    """``fn`` of two operands, at least one a whole tensor, as a new stage ``T_<name>``: two
    tensors broadcast as NumPy (tag ``broadcast``), a scalar (a number or an expression) meets
    every element (tag ``elemwise``), as TVM's Tensor operators and topi's do."""
    tensors = [t for t in (lhs, rhs) if isinstance(t, Tensor)]
    if not tensors:
        return fn(lhs, rhs)
    shape = tensors[0].shape if len(tensors) == 1 else broadcast_shape(lhs.shape, rhs.shape)
    tag = "broadcast" if len(tensors) == 2 else "elemwise"
    return compute(shape, lambda *i: fn(_at(lhs, i), _at(rhs, i)), name=f"T_{name}", tag=tag)
