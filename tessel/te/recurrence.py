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
from dataclasses import dataclass

from ..arith import Analyzer, IntSet
from ..errors import DefinitionError, LowerError
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.dtype import to_dtype as _unused  # noqa: F401  (kept for the dtype= argument's spelling)
from ..ir.functor import Mutator, collect, substitute
from .operation import LoopNest, Operation, Request, TensorList
from .tensor import ComputeOp, Tensor, _axis_names, _check_body, _check_shape, _loaded, domain_condition


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

    def __init__(self, name: str, tag: str, attrs: dict | None, axis, body, where, prev: Tensor | None,
                 base: Tensor | None, directions: Sequence[int], self_tensor: Tensor | None = None):
        super().__init__(name, tag, attrs, axis, body, where)
        self.prev, self.base = prev, base
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

    def reindex(self, iv: E.IterVar, x: E.PrimExpr) -> E.PrimExpr:
        k = next((k for k, a in enumerate(self.axis) if a is iv), None)
        if k is None or self.directions[k] > 0:
            return x
        return O.sub(O.add(O.add(iv.dom.min, iv.dom.min), O.sub(iv.dom.extent, 1)), x)

    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> DefinitionOp:
        if not any(t in tmap for t in self.input_tensors()):
            return self
        new = ComputeOp.replace_inputs(self, {k: v for k, v in tmap.items() if k.op is not self})
        return DefinitionOp(self.name, self.tag, self.attrs, self.axis, new.body, new.where,
                            tmap.get(self.prev, self.prev) if self.prev is not None else None, self.base,
                            self.directions, self.outputs[0])

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
        return ComputeOp.build_provide(self, _Reindexed(nest, self), stage, body)

    def build_realize(self, stage, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
        """The first definition realizes the shared storage (unless it is an input written in
        place) around everything after it; every definition's reads and writes use it."""
        if self.prev is not None and self.prev.op.storage(self.prev) is self.storage(self.outputs[0]):
            return body  # not the first: the first realized it around this one
        return body


class _Reindexed:
    """The loop builder lent to ComputeOp's ``build_provide``, with the root axes that run
    backwards given their index (``reindex``) instead of the loop's count."""

    def __init__(self, nest: LoopNest, op: DefinitionOp):
        self._nest, self._op = nest, op

    def __getattr__(self, name: str):
        return getattr(self._nest, name)

    def index_values(self, stage) -> dict[E.IterVar, E.PrimExpr]:
        value = self._nest.index_values(stage)
        return {iv: (self._op.reindex(iv, v) if iv in self._op.axis else v) for iv, v in value.items()}

    def bound_checks(self, stage, value: dict[E.IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
        loop = {iv: (self._op.reindex(iv, v) if iv in self._op.axis else v) for iv, v in value.items()}
        return self._nest.bound_checks(stage, loop)


class _SelfRewriter(Mutator):
    def __init__(self, old: Tensor, new: Tensor):
        self.old, self.new = old, new

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        e = self.generic_visit(e)
        return E.ProducerLoad(self.new, e.indices) if e.producer is self.old else e


class _Redirect(Mutator):
    """Every read and write of a definition's output made to the shared storage."""

    def __init__(self, storage: dict[int, Tensor]):
        self.storage = storage

    def visit_ProducerStore(self, s: S.ProducerStore):
        s = self.generic_visit(s)
        t = self.storage.get(id(s.producer))
        return S.ProducerStore(t, s.value, s.indices) if t is not None else s

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        e = self.generic_visit(e)
        t = self.storage.get(id(e.producer))
        return E.ProducerLoad(t, e.indices) if t is not None else e
