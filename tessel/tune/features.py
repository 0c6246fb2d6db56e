"""Loop features of a lowered kernel: what the cost model learns from.

The knob values alone say little across knobs (a split of 8 means one thing on the rows and
another on the reduction); the loops the schedule produced say more and in one vocabulary:
how deep the nest is and what each level is (extent and kind), how many iterations run in
parallel, how wide the vectors are, how much is unrolled, how many bytes the kernel touches
and how much arithmetic it does per byte. The vector has a fixed length, so models compare
kernels of any shape.
"""

from __future__ import annotations

import math

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Visitor
from ..ir.stmt import LoopKind

LEVELS = 6  # loop levels of the deepest nest described one by one
_KINDS = (LoopKind.SERIAL, LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED)
_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max)


def _extent(e) -> int:
    """A loop extent as a number (a symbolic one counts as 16, a typical unknown)."""
    return int(e.value) if isinstance(e, E.IntImm) else 16


def _log(v: float) -> float:
    return math.log2(v + 1.0)


class _Walk(Visitor):
    """Collects per-kind iteration counts, the deepest nest, and work under the loops."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, str]] = []
        self.deepest: list[tuple[int, str]] = []
        self.loops = 0
        self.kind_product = dict.fromkeys(_KINDS, 1)
        self.kind_count = dict.fromkeys(_KINDS, 0)
        self.stores = 0.0  # dynamic count of stores (iterations of their loops)
        self.loads = 0.0
        self.arith = 0.0
        self.alloc_bytes = 0
        self.innermost_extent = 1

    def _trip(self) -> float:
        return float(math.prod(n for n, _ in self.stack)) if self.stack else 1.0

    def visit_For(self, node: S.For) -> None:
        n, kind = _extent(node.extent), node.kind if node.kind in _KINDS else LoopKind.SERIAL
        self.loops += 1
        self.kind_count[kind] += 1
        self.kind_product[kind] = max(self.kind_product[kind], n) if kind == LoopKind.VECTORIZED else \
            self.kind_product[kind] * n
        self.stack.append((n, kind))
        if len(self.stack) > len(self.deepest):
            self.deepest = list(self.stack)
        if not any(isinstance(x, S.For) for x in _direct_loops(node.body)):
            self.innermost_extent = max(self.innermost_extent, n)
        self.visit(node.body)
        self.stack.pop()

    def visit_Allocate(self, node: S.Allocate) -> None:
        self.alloc_bytes += _buffer_bytes(node.buffer)
        self.visit(node.body)

    def visit_BufferStore(self, node) -> None:
        self.stores += self._trip()
        lanes = getattr(getattr(node.value, "dtype", None), "lanes", 1) or 1
        if lanes > 1:  # a loop the vectorizer turned into vector statements counts as a vector loop
            self.kind_count[LoopKind.VECTORIZED] += 1
            self.kind_product[LoopKind.VECTORIZED] = max(self.kind_product[LoopKind.VECTORIZED], lanes)
        self.generic_visit(node)

    def visit_BufferLoad(self, node) -> None:
        self.loads += self._trip()
        self.generic_visit(node)

    def generic_visit(self, node) -> None:
        if isinstance(node, _ARITH):
            self.arith += self._trip()
        super().generic_visit(node)


def _direct_loops(stmt) -> list:
    """The loops reachable from ``stmt`` without passing through another loop (one level down)."""
    out, todo = [], [stmt]
    while todo:
        s = todo.pop()
        if isinstance(s, S.For):
            out.append(s)
        elif isinstance(s, S.SeqStmt):
            todo.extend(s.seq)
        elif isinstance(s, S.IfThenElse):
            todo.extend(x for x in (s.then_case, s.else_case) if x is not None)
        elif isinstance(s, S.LetStmt | S.AttrStmt | S.Allocate):
            todo.append(s.body)
    return out


def _buffer_bytes(buf: S.Buffer) -> int:
    return math.prod(_extent(d) for d in buf.shape) * max(buf.dtype.bits // 8, 1)


def loop_features(func: S.PrimFunc, flop: float = 0.0) -> list[float]:
    """The fixed-length feature vector of a lowered kernel (see the module doc)."""
    w = _Walk()
    w.visit(func.body)
    param_bytes = sum(_buffer_bytes(b) for b in func.params)
    touched = param_bytes + w.alloc_bytes
    work = flop or w.arith
    out = [float(w.loops), float(len(w.deepest)), _log(w.innermost_extent), _log(param_bytes), _log(w.alloc_bytes),
           _log(w.stores), _log(w.loads), _log(w.arith), _log(work / max(touched, 1) * 64)]
    for kind in _KINDS:
        out += [float(w.kind_count[kind]), _log(w.kind_product[kind] if w.kind_count[kind] else 0)]
    levels = w.deepest[-LEVELS:]
    levels = [(0, "")] * (LEVELS - len(levels)) + levels
    for n, kind in levels:
        out.append(_log(n))
        out += [1.0 if kind == k else 0.0 for k in _KINDS]
    return out


FEATURE_LENGTH = 9 + 2 * len(_KINDS) + LEVELS * (1 + len(_KINDS))
