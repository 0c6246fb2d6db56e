"""The IterVar relations a stage records, in the order they were made.

They are replayable facts, not instructions: InferBound passes ranges down them and index
sets up them (seed 000), lowering derives root indices from leaf loop variables through them,
and the views draw them as the IterVar-relation DAG (seed 001).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import IterVar, PrimExpr


@dataclass(frozen=True, eq=False)
class Split:
    """``parent = outer * factor + inner`` (``nparts`` fixes the outer extent instead)."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: PrimExpr | None
    nparts: PrimExpr | None

    @property
    def inputs(self) -> tuple[IterVar, ...]:
        return (self.parent,)

    @property
    def outputs(self) -> tuple[IterVar, ...]:
        return (self.outer, self.inner)


@dataclass(frozen=True, eq=False)
class Fuse:
    """``fused = outer * extent(inner) + inner``."""

    outer: IterVar
    inner: IterVar
    fused: IterVar

    @property
    def inputs(self) -> tuple[IterVar, ...]:
        return (self.outer, self.inner)

    @property
    def outputs(self) -> tuple[IterVar, ...]:
        return (self.fused,)


@dataclass(frozen=True, eq=False)
class Rebase:
    """``parent = rebased + min(parent)``: the same loop, counted from zero."""

    parent: IterVar
    rebased: IterVar

    @property
    def inputs(self) -> tuple[IterVar, ...]:
        return (self.parent,)

    @property
    def outputs(self) -> tuple[IterVar, ...]:
        return (self.rebased,)


@dataclass(frozen=True, eq=False)
class Singleton:
    """A loop of extent one made out of nothing (fusing zero axes)."""

    iter_var: IterVar

    @property
    def inputs(self) -> tuple[IterVar, ...]:
        return ()

    @property
    def outputs(self) -> tuple[IterVar, ...]:
        return (self.iter_var,)


Relation = Split | Fuse | Rebase | Singleton
