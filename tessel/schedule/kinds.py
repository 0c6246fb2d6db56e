"""The vocabulary of a stage: where it is computed, and what each of its loops is annotated with.

Kept apart from ``stage.py`` so that the modules implementing the primitives, which ``Stage``
calls, can speak of attachments and annotations without importing the class that calls them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from ..ir import expr as E
from ..ir.stmt import LoopKind


class AttachKind(StrEnum):
    """Where a stage is computed: at the root of the program, inside a loop of another stage
    (``attach_stage``, ``attach_ivar``), or inlined into its readers (TVM's attach types)."""

    ROOT = "root"
    SCOPE = "scope"
    INLINE = "inline"

    @property
    def tvm_code(self) -> int:
        """TVM's number for it (``AttachType``: kGroupRoot 1, kInline 2, kScope 4; tessel has no
        kInlinedAlready 3, an inlined stage stays INLINE, nor kScanUpdate 5, a scan's body is
        computed at the scan's loop, SCOPE)."""
        return _TVM_ATTACH_CODE[self]

    def __eq__(self, other) -> bool:
        # code written against TVM compares attach_type with its enum's numbers
        if isinstance(other, int) and not isinstance(other, bool):
            return self.tvm_code == other
        return str.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = str.__hash__


ROOT, SCOPE, INLINE = AttachKind.ROOT, AttachKind.SCOPE, AttachKind.INLINE
_TVM_ATTACH_CODE = {ROOT: 1, INLINE: 2, SCOPE: 4}


_TVM_ITER_TYPE = {LoopKind.SERIAL: E.IterVar.DataPar, LoopKind.THREAD_BINDING: E.IterVar.DataPar, LoopKind.UNROLLED: E.IterVar.Unrolled,
                  LoopKind.VECTORIZED: E.IterVar.Vectorized, LoopKind.PARALLEL: E.IterVar.Parallelized,
                  LoopKind.TENSORIZED: E.IterVar.Tensorized}


class _Key(str):
    """A pragma's name: the str it is, and ``.value`` for code written against TVM."""

    @property
    def value(self) -> str:
        return str(self)


@dataclass
class IterVarAttr:
    """Annotations of one loop: its kind (serial, parallel, vectorized, unrolled) and binding."""

    kind: LoopKind = LoopKind.SERIAL
    bind_thread: E.IterVar | None = None
    pragmas: dict = field(default_factory=dict)
    tensor_intrin: object = None  # kind "tensorized": the TensorIntrin replacing the loops from here in
    prefetch: tuple = ()  # (tensor, offset) pairs fetched at the top of this loop (see hints.py)
    distributed: bool = False  # its range is split in blocks over MPI ranks (Stage.distribute)
    block: int | None = None  # distributed block-cyclic, in blocks of this many (None: one block a rank)

    @property
    def iter_type(self) -> int:
        """The kind as TVM numbers it (``te.IterVar.Vectorized`` ...), for code written against TVM."""
        return _TVM_ITER_TYPE.get(self.kind, E.IterVar.DataPar)

    @property
    def pragma_keys(self) -> tuple[str, ...]:
        """The pragmas on the loop, in the order given (TVM's ``IterVarAttr.pragma_keys``; each a
        str that also answers ``.value``, as TVM's StringImm keys do)."""
        return tuple(_Key(k) for k in self.pragmas)

    @property
    def pragma_values(self) -> tuple:
        return tuple(self.pragmas.values())


@dataclass(frozen=True)
class Placement:
    """Where a stage is computed, as one value: replaced whole, never edited, so a primitive
    that moves a stage cannot leave part of an earlier placement behind (``compute_at`` used to
    reset four fields by hand).

    ``kind``: root, inside a loop of another stage (``SCOPE``: ``stage``'s loop ``loop``), or
    inlined into its readers. computeAt by position (seed 003) adds ``position``, how many of its
    outer loops it shares with its readers, and ``shared``: which of its own loops *are* a host
    stage's loops (nvFuser's loop sharing: lowered as the host's loop, not a loop of its own).

    ``store``: where its storage is made when that is outside the loop it is computed at
    (nvFuser's separate allocation and compute points): ``None``, there; ``()``, the root;
    ``(loop,)``, inside that host loop, one of the loops it shares. Its storage then lives across
    the inner shared loops, so a reduction that shares its reduction loop with another stage
    keeps its init there (``compute_at_pos.share_reduction_loop``) and ``compute_with`` computes
    a stage in its reader's inner loops while readers outside them still see all of it."""

    kind: AttachKind = AttachKind.ROOT
    stage: StageBase | None = None
    loop: E.IterVar | None = None
    shared: tuple[tuple[E.IterVar, E.IterVar], ...] = ()  # (its loop, the host's loop), outermost first
    position: int = 0
    store: tuple[E.IterVar, ...] | None = None
    #: (its root axis, the host's root axis): computed at a host loop that is none of its loops,
    #: each iteration over the box of its domain the host's iteration covers along these axes
    #: (nvFuser's loop map forwarded through a broadcast; ``storage_point.share_by_image``)
    image: tuple[tuple[E.IterVar, E.IterVar], ...] = ()

    @staticmethod
    def at(stage: StageBase, loop: E.IterVar) -> Placement:
        """TE's ``compute_at``: inside ``stage``'s loop ``loop``, sharing no loop of its own."""
        return Placement(AttachKind.SCOPE, stage, loop)

    @functools.cached_property
    def shared_map(self) -> Mapping[E.IterVar, E.IterVar]:
        """``shared`` as a read-only map (made once: a placement never changes)."""
        return MappingProxyType(dict(self.shared))

    def __getstate__(self) -> dict:
        """Without the cached ``shared_map`` (a read-only view, which pickle cannot store): a
        schedule pickles after it was lowered too (the shared root placement had cached one)."""
        return {k: v for k, v in self.__dict__.items() if k != "shared_map"}

    def moved(self, stage: StageBase | None, loop: E.IterVar | None) -> Placement:
        """The same placement at another host or loop (the host was copied, or its loop remade)."""
        return dataclasses.replace(self, stage=stage, loop=loop)


class PlacementView:
    """One field of a stage's placement record under TVM's name (``attach_type``: ``kind``,
    ``attach_stage``: ``stage``, ``attach_ivar``: ``loop``): read from the record, and a write
    (behind the primitives' back, as TVM code does) replaces the record."""

    def __init__(self, field_name: str):
        self.field_name = field_name

    def __get__(self, stage, owner=None):
        return self if stage is None else getattr(stage.placement, self.field_name)

    def __set__(self, stage, value) -> None:
        stage.placement = dataclasses.replace(stage.placement, **{self.field_name: value})


ROOT_PLACEMENT = Placement()
INLINE_PLACEMENT = Placement(AttachKind.INLINE)


class StageBase:
    """What every :class:`~tessel.schedule.stage.Stage` is, for the modules below ``stage.py``
    that must tell a stage from a tensor or an axis (recorded steps, fix code, commands) without
    importing the class whose primitives call them."""

    __slots__ = ()


__all__ = ["INLINE", "INLINE_PLACEMENT", "ROOT", "ROOT_PLACEMENT", "SCOPE", "AttachKind", "IterVarAttr", "Placement",
           "PlacementView", "StageBase"]
