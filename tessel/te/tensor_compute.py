"""A compute whose body is a tensor intrinsic called on regions of tensors (TVM's
TensorComputeOp): ``te.compute((m, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]))``.

Where ``s[C].tensorize(x, intrin)`` asks that loops of an ordinary compute be replaced by a
micro-kernel (and checks that they compute what it declares), here the micro-kernel *is* the
definition: the user says "C's row i is vadd of these two rows", and tessel emits the
intrinsic's statements once per iteration of the loops it may schedule.

* The axes the lambda names are the stage's loops (split, reorder, bind them as any); the
  remaining dimensions of the shape are the intrinsic's own, opaque axes (``ax0`` ...): ranged
  by InferBound (always whole: the intrinsic writes its whole tile) but no loops. A
  ``reduce_axis=`` given at the call is a loop of the stage too: the intrinsic's
  ``reduce_update`` runs once per step, after its ``reduce_init`` (once per output tile, hoisted
  out of the reduction loops as a compute's init is) or, without one, after its ``body`` in the
  first step (TVM's rule).
* What is read is the regions as written, whatever the intrinsic touches inside them (InferBound
  cannot see inside its statements, as for ``te.extern``); so a producer of a region must be
  stored: it cannot be inlined into the call.
* Each buffer of the intrinsic is bound to its region (``buffer_bind_scope``): a buffer with
  fewer dimensions than its region takes the region's last ones, the leading ones must have
  extent 1 (TVM's rule); its offset, strides and symbolic sizes are set from the region when
  storage is flattened. Scalar arguments (``intrin(i * i, A[i, j], i + j)``) set the intrinsic's
  ``scalar_params`` for each call.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arith import Analyzer, IntSet, eval_set
from ..errors import DefinitionError, LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import free_vars, substitute
from .extern_op import bind_buffer
from .operation import LoopNest, Operation, Request, TensorList
from .tensor import Tensor, TensorSlice, gather_axes, realize_axes


class TensorIntrinCall:
    """``intrin(A[i, 0:16], x, ..., reduce_axis=k)``: what a compute's function returns to make a
    :class:`TensorComputeOp` (regions of tensors, scalar arguments, reduction axes)."""

    is_intrinsic_call = True  # what te.compute recognises (tensor.py cannot import this module)

    def operation(self, name: str, tag: str, attrs, axis: list[E.IterVar], shape) -> TensorComputeOp:
        return tensor_compute(name, tag, attrs, axis, shape, self)

    def __init__(self, intrin, args: Sequence, reduce_axis=()):
        self.intrin = intrin
        self.tensors: list[Tensor] = []
        self.regions: list[tuple[E.Range, ...]] = []
        self.scalar_inputs: list[E.PrimExpr] = []
        for a in args:
            region = _region_of(a)
            if region is None:
                self.scalar_inputs.append(E.convert(a))
            else:
                self.tensors.append(region[0])
                self.regions.append(region[1])
        axes = reduce_axis if isinstance(reduce_axis, list | tuple) else [reduce_axis]
        for iv in axes:
            if not (isinstance(iv, E.IterVar) and iv.iter_type == E.IterVar.REDUCE):
                raise DefinitionError(f"intrinsic {intrin.name}: reduce_axis must be te.reduce_axis(...) axes, "
                                      f"got {iv!r}")
        self.reduce_axis = tuple(axes)


def _region_of(arg) -> tuple[Tensor, tuple[E.Range, ...]] | None:
    """The (tensor, region) an argument names: ``A[i, 0:16]``, or ``A[i, j]``, one element (as
    in TVM, where indexing a tensor names a region until it is used in an expression)."""
    if isinstance(arg, Tensor):
        return arg, tuple(E.Range(0, n) for n in arg.shape)
    if isinstance(arg, E.ProducerLoad) and isinstance(arg.producer, Tensor):
        return arg.producer, tuple(E.Range(i, 1) for i in arg.indices)
    if not isinstance(arg, TensorSlice):
        return None
    t, idx = arg.tensor, arg.indices
    if len(idx) != t.ndim:
        raise DefinitionError(f"{t.name}[...] names {len(idx)} of its {t.ndim} dimensions; a region passed to an "
                              "intrinsic gives each one (an index or a slice lo:hi)")
    out = []
    for k, x in enumerate(idx):
        if not isinstance(x, slice):
            out.append(E.Range(E.convert(x), 1))
            continue
        if x.step not in (None, 1):
            raise DefinitionError(f"{t.name}[...]: dimension {k} is sliced with step {x.step}; a region is contiguous")
        lo = E.convert(0 if x.start is None else x.start)
        hi = E.convert(t.shape[k] if x.stop is None else x.stop)
        out.append(E.Range(lo, Analyzer().simplify(E.sub(hi, lo))))
    return t, tuple(out)


class TensorComputeOp(Operation):
    """Outputs computed by a tensor intrinsic called on ``regions`` of ``inputs``, once per point of
    the first ``schedulable_ndim`` axes (and per step of ``reduce_axis``)."""

    def __init__(self, name: str, tag: str, attrs: dict | None, axis, schedulable_ndim: int, reduce_axis,
                 intrin, inputs, regions, scalar_inputs):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis, self.reduce_axis = tuple(axis), tuple(reduce_axis)
        self.schedulable_ndim = schedulable_ndim
        self.intrin = intrin
        self.inputs, self.regions = tuple(inputs), tuple(tuple(r) for r in regions)
        self.scalar_inputs = tuple(scalar_inputs)
        outs = intrin.buffers[len(intrin.inputs):]
        shape = tuple(iv.dom.extent for iv in self.axis)
        self.outputs = tuple(Tensor(self, k, shape, b.dtype) for k, b in enumerate(outs))

    @property
    def root_iter_vars(self) -> tuple[E.IterVar, ...]:
        return self.axis + self.reduce_axis

    @property
    def input_tensors(self) -> TensorList:
        seen: dict[int, Tensor] = {}
        for t in self.inputs:
            seen.setdefault(id(t), t)
        return TensorList(seen.values())

    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> TensorComputeOp:
        if not any(t in tmap for t in self.inputs):
            return self
        return TensorComputeOp(self.name, self.tag, self.attrs, self.axis, self.schedulable_ndim, self.reduce_axis,
                               self.intrin, [tmap.get(t, t) for t in self.inputs], self.regions, self.scalar_inputs)

    def inline_refusal(self) -> str | None:
        return (f"its values come from the intrinsic {self.intrin.name}'s statements, not an expression; "
                "compute it at a loop of its reader (compute_at) instead")

    # ---- InferBound: the regions as written ---------------------------------------------------
    def effective_body(self, inline) -> tuple:
        """The region reads, so that an inlined producer of a region is noticed (and refused)."""
        loads = tuple(E.ProducerLoad(t, [r.min for r in reg]) for t, reg in zip(self.inputs, self.regions))
        for t, load in zip(self.inputs, loads):
            got = inline(load)
            if not (isinstance(got, E.ProducerLoad) and got.producer is t):
                raise LowerError(f"stage {self.name}: it calls the intrinsic {self.intrin.name} on a region of "
                                 f"{t.name}, which is inlined; an intrinsic reads a stored tensor, so compute "
                                 f"{t.name} at a loop of {self.name} (compute_at) or at the root instead")
        return loads

    def read_tensors(self, body: tuple) -> list[Tensor]:
        return list(self.input_tensors())

    def propagate_bounds(self, body: tuple, dom_map: dict, producer: Operation, analyzer: Analyzer) -> list[Request]:
        out: list[Request] = []
        for t, region in zip(self.inputs, self.regions):
            if t.op is producer:
                out.append((t, [_range_set(r, dom_map) for r in region]))
        return out

    def gather_bound(self, stage, requests, analyzer: Analyzer) -> list[tuple[E.IterVar, E.Range]]:
        """The stage's axes as a compute's; the intrinsic's own axes whole (it writes its whole tile)."""
        got = dict(gather_axes(self, stage, requests, analyzer))
        for iv in self.axis[self.schedulable_ndim:]:
            got[iv] = iv.dom
        return [(iv, got[iv]) for iv in self.root_iter_vars]

    def build_realize(self, stage, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
        return realize_axes(self, stage, rmap, body)

    # ---- lowering: the intrinsic's statements per iteration ------------------------------------
    def build_provide(self, nest: LoopNest, stage, body: tuple) -> S.Stmt:
        intrin = self.intrin
        leaves = stage.leaf_iter_vars
        value = nest.index_values(stage)
        preds = nest.bound_checks(stage, value)
        if not self.reduce_axis:
            return nest.nest(stage, 0, len(leaves), nest.guarded(preds, self._bound(intrin.body, value, True)))
        first = next(k for k, iv in enumerate(leaves) if iv.is_reduce)
        update = self._bound(intrin.reduce_update, value, True)
        if intrin.reduce_init is None:  # TVM's rule: the body in the first step, the update after
            at_start = [E.eq(value[iv], iv.dom.min) for iv in self.reduce_axis]
            step = S.IfThenElse(E.all_(*at_start), self._bound(intrin.body, value, True), update)
            return nest.nest(stage, 0, len(leaves), nest.guarded(preds, step))
        red_vars = {iv.var for iv in leaves if iv.is_reduce}
        data_vars = set().union(*(free_vars(value[iv]) for iv in self.axis[:self.schedulable_ndim]))
        loops = [iv for iv in leaves[first:] if iv.var in data_vars]
        skipped = red_vars - {iv.var for iv in loops}
        init = nest.guarded([p for p in preds if not free_vars(p) & skipped],
                            self._bound(intrin.reduce_init, value, False))
        fresh = {iv.var: E.Var(iv.var.name, iv.var.dtype) for iv in loops}
        init = substitute(nest.init_nest(stage, loops, init), fresh)
        update = nest.nest(stage, first, len(leaves), nest.guarded(preds, update))
        return nest.nest(stage, 0, first, S.seq(init, update))

    def _bound(self, stmt: S.Stmt | None, value: dict, inputs: bool) -> S.Stmt:
        """``stmt`` with the intrinsic's buffers bound to this iteration's regions and its scalar
        parameters set to the call's arguments."""
        intrin = self.intrin
        if stmt is None:
            raise LowerError(f"stage {self.name}: the intrinsic {intrin.name} declares no statement for this "
                             "step (body, or reduce_init/reduce_update for a call with reduce_axis)")
        roots = {iv.var: value[iv] for iv in self.root_iter_vars if iv in value}
        out_region = tuple(E.Range(value[iv], 1) for iv in self.axis[:self.schedulable_ndim]) + \
            tuple(iv.dom for iv in self.axis[self.schedulable_ndim:])
        n_in = len(intrin.inputs)
        pairs = [(intrin.buffers[n_in + k], t, out_region) for k, t in enumerate(self.outputs)]
        if inputs:
            pairs += [(buf, t, tuple(E.Range(substitute(r.min, roots), substitute(r.extent, roots)) for r in reg))
                      for buf, t, reg in zip(intrin.buffers, self.inputs, self.regions)]
        for buf, t, region in reversed(pairs):
            stmt = bind_buffer(buf, t, region, stmt)
        for var, x in reversed(list(zip(intrin.scalar_params, self.scalar_inputs))):
            stmt = S.LetStmt(var, E.cast(substitute(x, roots), var.dtype), stmt)
        return stmt


def _range_set(r: E.Range, dom_map: dict) -> IntSet:
    lo = eval_set(r.min, dom_map)
    hi = eval_set(E.add(r.min, E.sub(r.extent, 1)), dom_map)
    return IntSet.interval(lo.min_value, hi.max_value)


def tensor_compute(name: str, tag: str, attrs, axis: list[E.IterVar], shape, call: TensorIntrinCall):
    """The operation of ``te.compute(shape, lambda i: intrin(...))``: ``axis`` the lambda's, the
    rest of ``shape`` the intrinsic's own axes; checked against the intrinsic's declaration."""
    intrin = call.intrin
    where = f"compute {name}: the intrinsic {intrin.name}"
    opaque = [E.IterVar(E.Range(0, s), E.Var(f"ax{k}", s.dtype), E.IterVar.OPAQUE)
              for k, s in enumerate(shape[len(axis):])]
    if len(call.tensors) != len(intrin.inputs):
        raise DefinitionError(f"{where} takes {len(intrin.inputs)} tensor region(s) "
                              f"({', '.join(t.name for t in intrin.inputs)}), the call gives {len(call.tensors)}")
    if len(call.scalar_inputs) != len(intrin.scalar_params):
        raise DefinitionError(f"{where} takes {len(intrin.scalar_params)} scalar argument(s), the call gives "
                              f"{len(call.scalar_inputs)} ({', '.join(map(str, call.scalar_inputs)) or 'none'})")
    if call.reduce_axis and intrin.reduce_update is None:
        raise DefinitionError(f"{where} has no reduce_update, so it cannot be called with reduce_axis= (its "
                              "fcompute returns (body, reduce_init, reduce_update) for that)")
    for t, region, buf in zip(call.tensors, call.regions, intrin.buffers):
        _check_region(where, t.name, t.dtype, region, buf)
    full = axis + opaque
    out_region = [E.Range(0, 1)] * len(axis) + [iv.dom for iv in opaque]
    for k, buf in enumerate(intrin.buffers[len(intrin.inputs):]):
        _check_region(where, f"output {k} ({name})", buf.dtype, out_region, buf)
    return TensorComputeOp(name, tag, attrs, full, len(axis), call.reduce_axis, intrin, call.tensors,
                           call.regions, call.scalar_inputs)


def _check_region(where: str, what: str, dtype, region, buf) -> None:
    lead = len(region) - len(buf.shape)
    if buf.dtype != dtype:
        raise DefinitionError(f"{where}: its buffer {buf.name} is {buf.dtype}, {what} is {dtype}")
    if lead < 0:
        raise DefinitionError(f"{where}: its buffer {buf.name} has {len(buf.shape)} dimensions, the region of "
                              f"{what} {len(region)}; pass a region with at least as many")
    for k, r in enumerate(region[:lead]):
        if isinstance(r.extent, E.IntImm) and r.extent.value != 1:
            raise DefinitionError(f"{where}: the region of {what} has {len(region)} dimensions for the buffer "
                                  f"{buf.name}'s {len(buf.shape)}, so its leading dimension {k} must have extent 1, "
                                  f"not {r.extent}")
    for k, (n, r) in enumerate(zip(buf.shape, region[lead:])):
        if isinstance(n, E.IntImm) and isinstance(r.extent, E.IntImm) and n.value != r.extent.value:
            raise DefinitionError(f"{where}: its buffer {buf.name} has {n.value} elements in dimension {k}, the "
                                  f"region of {what} {r.extent.value}")


__all__ = ["TensorComputeOp", "TensorIntrinCall", "tensor_compute"]
