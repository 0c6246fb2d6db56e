"""The Operation interface: everything the rest of tessel asks of an operation.

InferBound, lowering and the dataflow rewrites never look at an operation's class; they call
the methods below. A new kind of computation (a scan, an extern call, a polyhedrally defined
statement, or a test's toy copy) is a new subclass and needs no edit anywhere else.

The protocol, in the order the pipeline uses it (seed 000's names where it has them):

* what it is: ``outputs`` (its tensors, with shapes and dtypes), ``root_iter_vars`` (the
  loops its stage starts from), ``input_tensors()`` (the read graph), ``is_placeholder``;
* schedule rewrites: ``replace_inputs(tmap)`` (cache_read and every rewrite that replaces a
  tensor re-points its readers through it), ``inline_refusal()`` (whether compute_inline may
  substitute it into its readers), ``is_reduction``;
* InferBound: ``effective_body(inline)`` (its expressions once inlined producers are
  substituted; what it reads is then ``read_tensors(body)``), ``propagate_bounds`` (phase 3:
  the regions of its inputs that one region of its root loops reads) and ``gather_bound``
  (phase 4: its root loops' ranges from the regions its consumers request);
* lowering: ``build_provide`` (its loop nest and statements, through the loop builder of
  ScheduleOps) and ``build_realize`` (the storage of its outputs around them).

The defaults are conservative, so a new operation can start with ``build_provide`` alone:
it reads all of every input, computes its whole domain wherever it is placed and stores all
of every output. Precise bounds come from overriding ``propagate_bounds``/``gather_bound``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..arith import Analyzer, IntSet
from ..errors import BoundError, LowerError, ScheduleError
from ..ir import expr as E
from ..ir import stmt as S

if TYPE_CHECKING:
    from .tensor import Tensor

#: one request: a tensor read by an operation and, per dimension, the indices read
Request = tuple["Tensor", list[IntSet]]


class TensorList(list):
    """The tensors an operation reads: TVM reads ``op.input_tensors`` as a property, tessel's
    operation protocol calls it (``op.input_tensors()``); this list answers both."""

    def __call__(self) -> TensorList:
        return self


class LoopNest(Protocol):
    """What ScheduleOps lends ``build_provide``: the stage's loops as the schedule made them,
    so an operation writes only its statements and never deals with splits, attachments or
    annotations itself."""

    #: the Range of every IterVar of every stage, as InferBound found it
    rmap: dict[E.IterVar, E.Range]

    def index_values(self, stage: Any) -> dict[E.IterVar, E.PrimExpr]:
        """Every IterVar of the stage (its root loops included) in terms of the leaf loops."""

    def bound_checks(self, stage: Any, value: dict[E.IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
        """Guards that keep a non-divisible split or a partial region inside the domain."""

    def guarded(self, preds: list[E.PrimExpr], body: S.Stmt) -> S.Stmt:
        """``body`` run only where every predicate holds."""

    def nest(self, stage: Any, begin: int, end: int, body: S.Stmt) -> S.Stmt:
        """Leaf loops ``begin:end`` around ``body``, with the stages attached at them inside."""

    def loop(self, stage: Any, iv: E.IterVar, body: S.Stmt) -> S.Stmt:
        """One leaf loop around ``body``, as annotated (kind, thread binding, pragmas)."""

    def init_nest(self, stage: Any, loops: list[E.IterVar], body: S.Stmt) -> S.Stmt:
        """A reduction's init, hoisted out of its first reduction loop, in its leaf ``loops``."""

    def range_of(self, iv: E.IterVar) -> E.Range:
        """The range InferBound gave ``iv`` (any IterVar of any stage)."""

    def hoists_init(self, stage: Any, first: int) -> bool:
        """Whether the stage's first reduction loop ``first`` is another stage's loop that its
        storage encloses (``Placement.store``): then its init goes to ``hoist_init``, not before
        the update."""

    def hoist_init(self, stage: Any, init: S.Stmt) -> None:
        """Take the init ``hoists_init`` moved: it runs where the stage's storage is made."""

    def attached_at(self, stage: Any, iv: E.IterVar) -> bool:
        """Whether some stage is computed at leaf loop ``iv`` of ``stage``."""


class Operation:
    """Base of every operation; ``outputs`` are created once so tensors keep their identity."""

    name: str
    tag: str
    attrs: dict
    outputs: tuple[Tensor, ...]
    #: an input of the kernel: supplied by the caller, so it has no stage loops or storage
    is_placeholder: bool = False

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def output(self, i: int) -> Tensor:
        return self.outputs[i]

    # ---- what it is ----------------------------------------------------------------------
    @property
    def root_iter_vars(self) -> tuple[E.IterVar, ...]:
        """The loops a stage of this operation starts from (before any split or fuse)."""
        return ()

    #: the data-parallel root loops that index the outputs (``C.op.axis``); () if none
    axis: tuple[E.IterVar, ...] = ()
    #: the root loops that accumulate into the outputs
    reduce_axis: tuple[E.IterVar, ...] = ()
    #: the declared domain: a condition over ``axis`` (None: every point of the shape). A point
    #: outside it is not computed (its element keeps what the storage held; see docs/polyhedral.md)
    where: E.PrimExpr | None = None

    def reindex(self, iv: E.IterVar, x: E.PrimExpr) -> E.PrimExpr:
        """The index of root axis ``iv`` when the loop counting it is at ``x`` (and, the map
        being its own inverse, the loop's value at index ``x``): ``x`` itself, unless the
        operation runs that axis backwards (a recurrence reading later indices)."""
        return x

    def storage(self, t: Tensor) -> Tensor:
        """The tensor whose storage holds output ``t``: ``t`` itself, unless several
        operations define one tensor (a recurrence's definitions, an in-place update)."""
        return t

    @property
    def is_reduction(self) -> bool:
        """Whether some root loop accumulates (it may then not be parallelized or vectorized)."""
        return bool(self.reduce_axis)

    @property
    def input_tensors(self) -> list[Tensor]:
        """The tensors it reads, as written (the dataflow graph's edges). A property, as in TVM,
        whose value may also be called (``op.input_tensors()``, ``te.TensorList``); a subclass
        may define it as a plain method instead, since tessel only ever calls it."""
        return TensorList()

    def overwrites(self) -> Tensor | None:
        """The input whose storage this operation starts overwriting in place (the first
        definition of ``te.recurrence(..., inplace=X)``), else None; see ``stage_order``."""
        return None

    # ---- recurrences (a scan) -------------------------------------------------------------
    def state_placeholders(self) -> tuple[Tensor, ...]:
        """Placeholders that stand for this operation's own outputs at earlier steps (a scan's
        states). The stages of ``body_ops`` read them; no caller passes them."""
        return ()

    def body_scope(self) -> E.IterVar | None:
        """The root loop inside which ``body_ops`` run, one step per iteration (None: no body)."""
        return None

    def body_ops(self) -> list[Operation]:
        """The operations computed from ``state_placeholders``: the schedule attaches their
        stages at ``body_scope`` when it is created."""
        return []

    # ---- schedule rewrites ---------------------------------------------------------------
    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> Operation:
        """The same operation reading ``tmap[t]`` wherever it read ``t`` (self if it reads none).

        The result keeps the root IterVars, so the stage's loops and their schedule stay valid.
        """
        if any(t in tmap for t in self.input_tensors()):
            raise ScheduleError(
                f"operation {self.name} ({type(self).__name__}) cannot be made to read another tensor "
                f"(it does not define replace_inputs); leave it out of the readers of cache_read"
            )
        return self

    def inline_refusal(self) -> str | None:
        """Why compute_inline must refuse this operation (None: it may be inlined).

        An inlinable operation gives one expression per output over ``axis`` in
        ``effective_body``; readers substitute it for their loads.
        """
        return "only a te.compute stage can be inlined"

    # ---- InferBound ----------------------------------------------------------------------
    def effective_body(self, inline: Callable[[E.PrimExpr], E.PrimExpr]) -> tuple:
        """Its expressions with every read of an inlined stage substituted by ``inline``.

        What InferBound and lowering pass back to ``read_tensors``, ``propagate_bounds`` and
        ``build_provide``; an operation without expressions returns ().
        """
        return ()

    def read_tensors(self, body: tuple) -> list[Tensor]:
        """The tensors it reads once inlined stages are substituted (``body``: effective_body)."""
        return self.input_tensors()

    def propagate_bounds(self, body: tuple, dom_map: dict[E.Var, IntSet], producer: Operation,
                         analyzer: Analyzer) -> list[Request]:
        """Seed 000, phase 3: what of ``producer``'s outputs it reads while its root loops range
        over ``dom_map`` (root Var -> IntSet); one entry per read, in a fixed order.

        The default reads every element of every input, which is always safe.
        """
        return [(t, [IntSet.from_range(E.Range(0, n)) for n in t.shape])
                for t in self.read_tensors(body) if t.op is producer]

    def gather_bound(self, stage: Any, requests: Sequence[Request], analyzer: Analyzer) -> list[tuple[E.IterVar, E.Range]]:
        """Seed 000, phase 4: a Range for every root loop from what its consumers request
        (``requests``: the entries of every consumer's ``propagate_bounds``), in binding order.

        The default computes the whole domain, which is always enough.
        """
        return [(iv, self.root_domain(stage, iv)) for iv in self.root_iter_vars]

    def root_domain(self, stage: Any, iv: E.IterVar) -> E.Range:
        """The declared domain of root loop ``iv``: the range of a stage nobody restricts."""
        if iv.dom is None:
            raise BoundError(f"stage {stage.name}: axis {iv.name} has no domain")
        return iv.dom

    # ---- lowering ------------------------------------------------------------------------
    def build_provide(self, nest: LoopNest, stage: Any, body: tuple) -> S.Stmt:
        """Its loop nest and statements, written through ScheduleOps' loop builder ``nest``."""
        raise LowerError(
            f"operation {self.name} ({type(self).__name__}) does not say how it is lowered: "
            "define build_provide on its class"
        )

    def build_realize(self, stage: Any, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
        """The storage of its outputs around ``body`` (the region InferBound found needed).

        The default stores all of each output, which suits the default ``gather_bound``.
        """
        for t in reversed(self.outputs):
            body = S.ProducerRealize(t, tuple(E.Range(0, n) for n in t.shape), body, stage.scope)
        return body

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


# ---- the read graph (TVM's CreateReadGraph, PostDFSOrder, CreateFeedGraph) -----------------
def create_read_graph(roots: Sequence[Operation]) -> dict[Operation, list[Tensor]]:
    """Every operation the roots depend on, each with the tensors it reads (as written)."""
    graph: dict[Operation, list[Tensor]] = {}
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op in graph:
            continue
        graph[op] = op.input_tensors()
        stack.extend(t.op for t in graph[op] if t.op not in graph)
    return graph


def post_dfs_order(roots: Sequence[Operation], graph: dict[Operation, list[Tensor]] | None = None) -> list[Operation]:
    """The operations reachable from ``roots``, each after every operation it reads: the order
    stages are created and lowered in. ``graph`` (``create_read_graph``'s) gives the edges; by
    default each operation's inputs. An explicit stack: chains as long as a user writes them."""
    order: list[Operation] = []
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            reads = graph[node] if graph is not None and node in graph else node.input_tensors()
            stack.extend((t.op, False) for t in reversed(reads) if id(t.op) not in seen)
    return order


def stage_order(roots: Sequence[Operation]) -> list[Operation]:
    """The order stages are created and run in: ``post_dfs_order``, but an operation that starts
    overwriting an input in place (``overwrites``) runs after every other reader of that input
    that does not need it, and what that reader needs. The post-order may put such a reader
    after it when a later step of the overwriting computation reads the reader (PolyBench's
    correlation: the standard deviations read the data, the centring overwrites it and then
    divides by them); there it would read overwritten values, and is refused."""
    order = post_dfs_order(roots)
    for first in [op for op in order if op.overwrites() is not None]:
        k = next(n for n, op in enumerate(order) if op is first)
        after, base = order[k + 1:], first.overwrites()
        needs = {id(first)}  # what reads the overwriting operation, directly or not
        for op in after:
            if any(id(t.op) in needs for t in op.input_tensors()):
                needs.add(id(op))
        movers = {id(op) for op in after if id(op) not in needs and any(t is base for t in op.input_tensors())}
        for op in reversed(after):  # and what a mover reads (none of it needs the overwriting one)
            if id(op) in movers:
                movers |= {id(t.op) for t in op.input_tensors()}
        moved = [op for op in after if id(op) in movers]
        if moved:
            order = [*order[:k], *moved, first, *(op for op in after if id(op) not in movers)]
    return order


def create_feed_graph(graph: dict[Operation, list[Tensor]]) -> dict[Tensor, list[Operation]]:
    """The read graph turned around: each tensor with the operations that read it."""
    feed: dict[Tensor, list[Operation]] = {}
    for op, reads in graph.items():
        for t in reads:
            readers = feed.setdefault(t, [])
            if not any(r is op for r in readers):
                readers.append(op)
    return feed


__all__ = ["LoopNest", "Operation", "Request", "create_feed_graph", "create_read_graph", "post_dfs_order", "stage_order"]
