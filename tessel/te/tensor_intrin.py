"""Tensorize: the loops of a stage from one loop inward replaced by a user's micro-kernel.

``decl_tensor_intrin(op, fcompute)`` declares what a micro-kernel computes (``op``, a compute
over placeholders: e.g. a 16x16 matmul tile) and the statements that do it over declared
buffers of its operands (``fcompute(ins, outs)``: a call of a C function, typically).
``s[C].tensorize(x, intrin)`` asks that the loops from ``x`` inward be that micro-kernel.

When the stage is lowered the request is checked the way TVM checks it: the region the loops
inside ``x`` cover is found from the loop ranges (out_dom for the stage's axes, in_region for
each tensor it reads), the stage's body is rewritten in the intrinsic's terms (its axes become
the intrinsic's axes plus the tile's start, its reads become reads of the intrinsic's inputs
relative to their region) and must then equal the intrinsic's body, structurally, after
simplification; each axis the tile covers must have the intrinsic's extent. A mismatch is a
LowerError naming what differs. The operands' buffers are then bound to the regions (their
offsets and strides become variables set per tile) and the statements replace the loops.

Unlike TVM, a tile that a non-divisible split cuts short at an edge is not refused: the kernel
tests, per tile, whether the whole tile lies inside the tensors, runs the micro-kernel when it
does and the stage's own loops (guarded as usual) when it does not.

A reduction whose loops all lie inside ``x`` is the intrinsic's ``body``; one with reduction
loops outside ``x`` needs the intrinsic's ``reduce_update`` (run per reduction step) and uses its
``reduce_init`` (once per output tile) if it has one, as in TVM: ``fcompute`` then returns the
three. Without ``reduce_init`` the tile is set to the reducer's identity by the stage's own
loops (TVM runs ``body`` in the first step instead; the values are the same).
"""

from __future__ import annotations

from collections.abc import Callable

from ..arith import Analyzer, IntSet, eval_set, union
from ..errors import DefinitionError, LowerError, ScheduleError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import DeclBuffer, decl_buffer
from ..ir.functor import Mutator, free_vars, ir_transform, structural_equal, substitute
from ..ir.stmt import LoopKind
from .extern_op import bind_buffer
from .operation import LoopNest
from .tensor import ComputeOp, PlaceholderOp, Tensor, reduction_init, reduction_update


class TensorIntrin:
    """A micro-kernel: what it computes (``op``, over ``inputs``) and the statements that do
    it over ``buffers`` (inputs', then outputs' views)."""

    def __init__(self, name: str, op: ComputeOp, inputs, buffers, body, reduce_init, reduce_update,
                 scalar_params=()):
        self.name, self.op = name, op
        self.inputs, self.buffers = tuple(inputs), tuple(buffers)
        self.body, self.reduce_init, self.reduce_update = body, reduce_init, reduce_update
        self.scalar_params = tuple(scalar_params)

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name})"

    def __call__(self, *args, reduce_axis=()):
        """``intrin(A[i, 0:16], B[i, 0:16])`` inside a compute's function: that compute is this
        intrinsic called on those regions (see tensor_compute.py); other arguments are the
        values of its ``scalar_params``, in order."""
        from .tensor_compute import TensorIntrinCall

        return TensorIntrinCall(self, args, reduce_axis)

    def lower_into(self, op: ComputeOp, nest: LoopNest, stage, body: tuple) -> S.Stmt:
        """``op``'s statements with this micro-kernel in place of the tensorized loop and those
        inside it (``ComputeOp.build_provide`` asks the intrinsic it was given, so tensor.py
        need not import this module, which imports it)."""
        return build_tensorized(op, nest, stage, body)


def _stmt(x, name: str) -> S.Stmt | None:
    if x is None or isinstance(x, S.Stmt):
        return x
    if isinstance(x, E.PrimExpr | int):
        return S.Evaluate(E.convert(x))
    raise DefinitionError(f"decl_tensor_intrin {name}: fcompute gave {x!r}; give statements or calls")


def decl_tensor_intrin(op, fcompute: Callable, name: str = "tensor_intrin", binds: dict | None = None,
                       scalar_params=None, default_buffer_params: dict | None = None) -> TensorIntrin:
    """Declare a micro-kernel computing ``op`` (a te.compute over placeholders) by the
    statement(s) ``fcompute(ins, outs)`` builds over buffers of its inputs and outputs:
    one statement (the whole computation) or ``(body, reduce_init, reduce_update)``.
    ``binds`` gives the buffer of a tensor (``decl_buffer`` with ``strides`` variables accepts
    any tile of a larger tensor; the default is compact)."""
    if hasattr(op, "op") and isinstance(op.op, ComputeOp):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise DefinitionError(f"decl_tensor_intrin {name}: op must be the operation of a te.compute, got {op!r}")
    scalar_params = tuple(scalar_params or ())
    for v in scalar_params:
        if not isinstance(v, E.Var):
            raise DefinitionError(f"decl_tensor_intrin {name}: scalar_params must be variables (te.var), got {v!r}")
    inputs = op.input_tensors()
    for t in inputs:
        if not isinstance(t.op, PlaceholderOp):
            raise DefinitionError(f"decl_tensor_intrin {name}: input {t.name} is computed; an intrinsic's compute "
                                  "must read placeholders only")
    binds = dict(binds or {})
    params = dict(default_buffer_params or {})
    buffers = []
    for t in [*inputs, *op.outputs]:
        buf = binds.get(t) or decl_buffer(t.shape, t.dtype, t.op.name, **params)
        if not isinstance(buf, DeclBuffer) or buf.dtype != t.dtype or len(buf.shape) != t.ndim:
            raise DefinitionError(f"decl_tensor_intrin {name}: the buffer for {t.name} must be a decl_buffer of "
                                  f"dtype {t.dtype} and {t.ndim} dimension(s)")
        buf.writes = t.op is op
        buffers.append(buf)
    ins, outs = buffers[:len(inputs)], buffers[len(inputs):]
    got = fcompute(ins, outs, list(scalar_params)) if scalar_params else fcompute(ins, outs)
    parts = list(got) if isinstance(got, list | tuple) else [got]
    if not 1 <= len(parts) <= 3:
        raise DefinitionError(f"decl_tensor_intrin {name}: fcompute gives a statement or (body, reduce_init, "
                              f"reduce_update), got {len(parts)} parts")
    parts = [_stmt(p, name) for p in parts] + [None] * (3 - len(parts))
    return TensorIntrin(name, op, inputs, buffers, *parts, scalar_params=scalar_params)


def check_tensorize(stage, var: E.IterVar, intrin) -> None:
    """What ``s[C].tensorize`` can refuse at once (the match itself needs the loop ranges)."""
    if not isinstance(intrin, TensorIntrin):
        raise ScheduleError(f"stage {stage.name}: tensorize({var.name}, ...) needs a tensor intrinsic made by "
                            f"decl_tensor_intrin, got {intrin!r}")
    if not isinstance(stage.op, ComputeOp):
        what = getattr(getattr(stage.op, "intrin", None), "name", None)
        if what is not None:  # a TensorComputeOp: already the call of an intrinsic per iteration
            raise ScheduleError(f"stage {stage.name}: it is already computed by the intrinsic {what} (its compute "
                                "calls it); tensorize replaces the loops of a te.compute written out")
        raise ScheduleError(f"stage {stage.name}: only a te.compute stage can be tensorized")
    if intrin.scalar_params:
        raise ScheduleError(f"stage {stage.name}: the intrinsic {intrin.name} takes scalar_params, which only a "
                            "call gives (te.compute(shape, lambda i: intrin(x, A[i, 0:n]))); it cannot tensorize")
    for iv in stage.leaf_iter_vars:
        if iv is not var and stage.leaf_kind(iv) == LoopKind.TENSORIZED:
            raise ScheduleError(f"stage {stage.name}: loop {iv.name} is already tensorized; one tensorize per stage")


# ---- lowering ------------------------------------------------------------------------------
class _Tile:
    """The region one iteration of the loops outside the tensorized one covers."""

    def __init__(self, op: ComputeOp, nest: LoopNest, stage, body: tuple):
        leaves = stage.leaf_iter_vars
        self.tloc = next(k for k, iv in enumerate(leaves) if stage.leaf_kind(iv) == LoopKind.TENSORIZED)
        self.intrin: TensorIntrin = stage.iter_var_attrs[leaves[self.tloc]].tensor_intrin
        self.where = f"stage {stage.name}: tensorize at {leaves[self.tloc].name} with intrinsic {self.intrin.name}"
        self.ana = Analyzer()
        self.inner = {iv.var: IntSet.from_range(nest.rmap[iv]) for iv in leaves[self.tloc:]}
        self.value = nest.index_values(stage)
        self.out_dom = {iv: self._cover(self.value[iv], iv.dom) for iv in op.root_iter_vars}
        root_sets = {iv.var: IntSet.from_range(r) for iv, r in self.out_dom.items()}
        self.in_region: dict[Tensor, tuple[E.Range, ...]] = {}
        for t in op.input_tensors():
            reqs = [sets for tt, sets in op.propagate_bounds(body, root_sets, t.op, self.ana) if tt is t]
            self.in_region[t] = tuple(
                self._cover_set(union([r[k] for r in reqs]), E.Range(0, n)) for k, n in enumerate(t.shape))

    def _cover(self, e: E.PrimExpr, dom: E.Range) -> E.Range:
        return self._cover_set(eval_set(e, self.inner), dom)

    def _cover_set(self, s: IntSet, dom: E.Range) -> E.Range:
        r = s.cover_range(dom)
        return E.Range(self.ana.simplify(r.min), self.ana.simplify(r.extent))

    def uses_inner(self, e) -> bool:
        return bool(free_vars(e) & set(self.inner))

    def whole(self, preds: list[E.PrimExpr]) -> list[E.PrimExpr]:
        """Conditions under which every predicate holds for every point of the tile (the guards
        are ``x < bound`` and ``x >= bound`` made by the loop builder)."""
        out = []
        for p in preds:
            s = eval_set(p.a, self.inner) if isinstance(p, E.LT | E.GE) else None
            end = None if s is None else (s.max_value if isinstance(p, E.LT) else s.min_value)
            if end is None:
                raise LowerError(f"{self.where}: the condition {p} depends on loops inside the tensorized one "
                                 "in a way tessel cannot bound; tensorize a loop whose tiles it can test whole")
            out.append(E.lt(end, p.b) if isinstance(p, E.LT) else E.ge(end, p.b))
        return out


def _same_extent(t: _Tile, r: E.Range, iv: E.IterVar, target: E.IterVar) -> None:
    if not t.ana.can_prove_equal(r.extent, target.dom.extent):
        raise LowerError(f"{t.where}: the loops inside cover {r.extent} iteration(s) of axis {iv.name}, but the "
                         f"intrinsic's axis {target.name} has {target.dom.extent}; split {iv.name} by "
                         f"{target.dom.extent} and tensorize its inner loop")


class _Remap(Mutator):
    """The stage's body in the intrinsic's terms (TVM's TensorIntrinMatcher)."""

    def __init__(self, vmap: dict, axis_map: dict, in_map: dict):
        self.vmap, self.axis_map, self.in_map = vmap, axis_map, in_map
        self.combiner: E.CommReducer | None = None  # the intrinsic's, where the stage's is defined alike

    def visit_Var(self, v: E.Var):
        return self.vmap.get(v, v)

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = [self.visit(i) for i in e.indices]
        if e.producer not in self.in_map:
            return E.ProducerLoad(e.producer, idx)
        target, region, start = self.in_map[e.producer]
        return E.ProducerLoad(target, [E.sub(i, r.min) for i, r in zip(idx[start:], region[start:])])

    def visit_Reduce(self, e: E.Reduce):
        src = tuple(self.visit(s) for s in e.source)
        axis = tuple(self.axis_map[a] for a in e.axis if a in self.axis_map)
        comb = self.combiner if self.combiner is not None and _same_reducer(e.combiner, self.combiner) else e.combiner
        if e.finish is not None:
            raise DefinitionError("tensorize: a reduction whose value is finished afterwards ((init - sum) / d) "
                                  "does not match an intrinsic's; tensorize the reduction alone")
        return E.Reduce(comb, src, axis, self.visit(e.condition), e.value_index, e.init)


def _same_reducer(a: E.CommReducer, b: E.CommReducer) -> bool:
    """Two combiners defined alike (a copy of a program has its own reducer variables)."""
    if a is b:
        return True
    if a.name != b.name or len(a.lhs) != len(b.lhs) or [v.dtype for v in a.lhs] != [v.dtype for v in b.lhs]:
        return False
    vmap = dict(zip(a.lhs, b.lhs)) | dict(zip(a.rhs, b.rhs))
    return all(structural_equal(substitute(x, vmap), y) for x, y in zip(a.result, b.result)) and \
        all(structural_equal(x, y) for x, y in zip(a.identity, b.identity))


def _axes(t: _Tile, mine, theirs, what: str, vmap: dict, axis_map: dict, ana_vars: dict) -> None:
    if len(mine) < len(theirs):
        raise LowerError(f"{t.where}: the stage has {len(mine)} {what} axes, the intrinsic {len(theirs)}")
    lead = len(mine) - len(theirs)
    for k, iv in enumerate(mine):
        r = t.out_dom[iv]
        if k < lead:
            if not t.ana.can_prove_equal(r.extent, 1):
                raise LowerError(f"{t.where}: {what} axis {iv.name} has no counterpart in the intrinsic, so the "
                                 f"loops inside must cover one iteration of it, not {r.extent}")
            vmap[iv.var] = r.min
            continue
        target = theirs[k - lead]
        _same_extent(t, r, iv, target)
        vmap[iv.var] = E.add(target.var, r.min)
        axis_map[iv] = target
        ana_vars[target.var] = target.dom


def _match(t: _Tile, op: ComputeOp, body: tuple) -> list[E.PrimExpr]:
    """The stage's body in the intrinsic's terms (TVM's MatchTensorizeBody), refused with what
    differs unless it equals the intrinsic's."""
    intrin, iop = t.intrin, t.intrin.op
    inputs = op.input_tensors()
    if len(body) != len(iop.body):
        raise LowerError(f"{t.where}: the stage has {len(body)} output(s), the intrinsic {len(iop.body)}")
    if len(inputs) != len(intrin.inputs):
        raise LowerError(f"{t.where}: the stage reads {len(inputs)} tensor(s) ({', '.join(x.name for x in inputs)}), "
                         f"the intrinsic {len(intrin.inputs)} ({', '.join(x.name for x in intrin.inputs)})")
    vmap: dict = {}
    axis_map: dict = {}
    ana_vars: dict = {}
    _axes(t, op.axis, iop.axis, "data-parallel", vmap, axis_map, ana_vars)
    _axes(t, op.reduce_axis, iop.reduce_axis, "reduction", vmap, axis_map, ana_vars)
    in_map = {}
    for mine, theirs in zip(inputs, intrin.inputs):
        region = t.in_region[mine]
        start = len(region) - theirs.ndim
        if start < 0 or any(not t.ana.can_prove_equal(r.extent, 1) for r in region[:start]):
            raise LowerError(f"{t.where}: the tile reads region {_text(region)} of {mine.name}, which does not "
                             f"fit the intrinsic's input {theirs.name} of shape {tuple(theirs.shape)}")
        in_map[mine] = (theirs, region, start)
    ana = Analyzer()
    for v, r in ana_vars.items():
        ana.bind(v, r)
    remap = _Remap(vmap, axis_map, in_map)
    out = []
    for k, (b, want) in enumerate(zip(body, iop.body)):
        remap.combiner = want.combiner if isinstance(want, E.Reduce) else None
        got = _as_select(ana.simplify(remap.visit(b)))
        want = _as_select(ana.simplify(want))
        if got.dtype != want.dtype:
            raise LowerError(f"{t.where}: output {k} is {got.dtype}, the intrinsic's is {want.dtype}")
        if not structural_equal(got, want):
            x, y = _first_difference(got, want)
            raise LowerError(f"{t.where}: the computation does not match the intrinsic's declaration: in the "
                             f"intrinsic's terms the stage computes `{got}`, the intrinsic declares `{want}` "
                             f"(they first differ at `{x}` vs `{y}`)")
        out.append(got)
    return out


def tensorize_regions(stage, nest: LoopNest, body: tuple) -> tuple[dict, dict]:
    """What one call of a tensorized stage's intrinsic covers: the range of each root axis and
    the region of each tensor read (TVM's InferTensorizeRegion)."""
    t = _Tile(stage.op, nest, stage, body)
    return dict(t.out_dom), dict(t.in_region)


def tensorize_body(stage, nest: LoopNest, body: tuple, out_dom: dict, in_region: dict, intrin) -> list:
    """The stage's body over the given regions in ``intrin``'s terms, checked equal to its
    declaration (TVM's MatchTensorizeBody)."""
    t = _Tile(stage.op, nest, stage, body)
    t.out_dom, t.in_region, t.intrin = dict(out_dom), dict(in_region), intrin
    return _match(t, stage.op, body)


def _as_select(e: E.PrimExpr) -> E.PrimExpr:
    """``if_then_else(c, a, b)`` written as ``select(c, a, b)``: the same value (tessel's select
    evaluates only the chosen side too), so a stage guarded one way matches an intrinsic
    declared the other (cache_write guards a split's tail with if_then_else, TVM with Select)."""
    return ir_transform(e, None, lambda n: E.Select(*n.args) if isinstance(n, E.Call) and n.op == "if_then_else"
                        else None)


def _first_difference(a, b) -> tuple:
    """The innermost pair of differing expressions of two that are not structurally equal."""
    while True:
        if type(a) is not type(b) or not isinstance(a, E.Node):
            return a, b
        pairs = [(x, y) for x, y in zip(a.fields(), b.fields()) if not structural_equal(x, y)]
        kids = [(x, y) for x, y in pairs if isinstance(x, E.PrimExpr) and isinstance(y, E.PrimExpr)]
        for x, y in pairs:
            if isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y):
                kids += [(u, v) for u, v in zip(x, y) if isinstance(u, E.PrimExpr) and not structural_equal(u, v)]
        if len(pairs) != 1 or len(kids) != 1:
            return a, b
        a, b = kids[0]


def _text(region) -> str:
    return "[" + ", ".join(f"{r.min}:{r.min + r.extent}" for r in region) + "]"


def _binds(t: _Tile, op: ComputeOp, stmt: S.Stmt, inputs: bool = True) -> S.Stmt:
    """``stmt`` with the intrinsic's buffers bound to the tile's regions (outputs, then inputs)."""
    intrin = t.intrin
    out_region = tuple(t.out_dom[iv] for iv in op.axis)
    pairs = [(intrin.buffers[len(intrin.inputs) + k], out, out_region) for k, out in enumerate(op.outputs)]
    if inputs:
        pairs += [(buf, x, t.in_region[x]) for buf, x in zip(intrin.buffers, op.input_tensors())]
    for buf, tensor, region in reversed(pairs):
        stmt = bind_buffer(buf, tensor, region, stmt)
    return stmt


def _choose(t: _Tile, conds: list[E.PrimExpr], fast: S.Stmt, slow: S.Stmt) -> S.Stmt:
    conds = [c for c in (t.ana.simplify(c) for c in conds) if not t.ana.can_prove(c)]
    return S.IfThenElse(E.all_(*conds), fast, slow) if conds else fast


def build_tensorized(op: ComputeOp, nest: LoopNest, stage, body: tuple) -> S.Stmt:
    """The stage's loops down to the tensorized one, the micro-kernel inside (the stage's own
    loops for a tile cut short by the tensors' edge)."""
    t = _Tile(op, nest, stage, body)
    _match(t, op, body)
    leaves = stage.leaf_iter_vars
    for iv in leaves[t.tloc:]:
        if nest.attached_at(stage, iv):
            raise LowerError(f"{t.where}: a stage is computed at loop {iv.name}, inside the tensorized loops; "
                             "attach it further out")
    value = t.value
    roots = {iv.var: value[iv] for iv in op.root_iter_vars}
    idx = [value[iv] for iv in op.axis]
    preds = nest.bound_checks(stage, value)
    outer = [p for p in preds if not t.uses_inner(p)]
    whole = t.whole([p for p in preds if t.uses_inner(p)])
    first = next((k for k, iv in enumerate(leaves) if iv.is_reduce), len(leaves))
    if not op.is_reduction or t.tloc <= first:
        if t.intrin.body is None:
            raise LowerError(f"{t.where}: the intrinsic declares no body (only reduce_init/reduce_update); "
                             "tensorize a loop inside a reduction loop, or give the intrinsic a body")
        if op.is_reduction:
            slow = _reduction_slow(op, nest, stage, body, roots, idx, preds, t.tloc)
        else:
            stores = [S.ProducerStore(x, substitute(b, roots), idx) for x, b in zip(op.outputs, body)]
            slow = nest.nest(stage, t.tloc, len(leaves), nest.guarded(preds, S.seq(*stores)))
        inner = _choose(t, whole, _binds(t, op, t.intrin.body), slow)
        return nest.nest(stage, 0, t.tloc, nest.guarded(outer, inner))
    return _split_reduction(t, op, nest, stage, body[0], roots, idx, preds, outer, whole, first)


def _reduction_slow(op, nest, stage, body, roots, idx, preds, begin) -> S.Stmt:
    from .tensor import _build_reduction

    return _build_reduction(op, nest, stage, body[0], roots, idx, preds, begin)


def _split_reduction(t: _Tile, op: ComputeOp, nest: LoopNest, stage, red: E.Reduce, roots, idx, preds,
                     outer, whole, first) -> S.Stmt:
    """Reduction loops outside the tile: reduce_init once per output tile, reduce_update per step."""
    intrin = t.intrin
    if intrin.reduce_update is None:
        raise LowerError(f"{t.where}: reduction loops lie outside the tensorized loop, so the intrinsic needs "
                         "reduce_update (fcompute returns (body, reduce_init, reduce_update)); "
                         "or tensorize a loop outside every reduction loop")
    leaves = stage.leaf_iter_vars
    red_vars = {iv.var for iv in leaves if iv.is_reduce}
    data_inner = [iv for iv in leaves[t.tloc:] if not iv.is_reduce]
    init_slow = reduction_init(op, nest, stage, red, idx, preds, data_inner, roots)
    init_whole = [c for c in whole if not free_vars(c) & red_vars]
    # without reduce_init the tile starts from the reducer's identity, set by the stage's own loops
    # (TVM runs the intrinsic's body in the first step instead: the same values)
    init: S.Stmt = init_slow if intrin.reduce_init is None else _choose(
        t, init_whole, _binds(t, op, intrin.reduce_init, inputs=False), init_slow)
    init = nest.guarded([p for p in outer if not free_vars(p) & red_vars], init)
    fresh = {}
    for iv in reversed([iv for iv in leaves[first:t.tloc] if not iv.is_reduce]):
        fresh[iv.var] = E.Var(iv.var.name, iv.var.dtype)
        init = nest.loop(stage, iv, init)
    init = substitute(init, fresh)
    update_slow = nest.nest(stage, t.tloc, len(leaves), nest.guarded(preds, reduction_update(op, red, roots, idx)))
    update = _choose(t, whole, _binds(t, op, intrin.reduce_update), update_slow)
    update = nest.nest(stage, first, t.tloc, nest.guarded(outer, update))
    return nest.nest(stage, 0, first, S.seq(init, update))


__all__ = ["TensorIntrin", "build_tensorized", "check_tensorize", "decl_tensor_intrin", "tensorize_body", "tensorize_regions"]
