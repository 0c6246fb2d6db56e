"""A stage: how one operation is computed (its loops, their order and where it is placed).

Every primitive checks its arguments before touching anything, so a failed call leaves the
stage as it was, and the error names the stage and the axis in the user's own words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.expr import convert
from ..ir.stmt import LoopKind
from .groups import check_placement
from .hints import import_code
from .history import recorded
from .kinds import (
    INLINE,
    INLINE_PLACEMENT,
    ROOT,
    ROOT_PLACEMENT,
    SCOPE,
    IterVarAttr,
    Placement,
    PlacementView,
    StageBase,
)
from .positions import outside_positions
from .relations import Fuse, Relation, Singleton, Split

if TYPE_CHECKING:
    from ..te.tensor import Operation
    from .schedule import Schedule


class Stage(StageBase):
    def __init__(self, op: Operation, schedule: Schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        roots = list(op.root_iter_vars)
        self.all_iter_vars: list[E.IterVar] = list(roots)
        # an opaque root (a scan's spatial axis) is ranged by InferBound but is no loop
        self.leaf_iter_vars: list[E.IterVar] = [iv for iv in roots if iv.iter_type != E.IterVar.OPAQUE]
        self.relations: list[Relation] = []
        self.placement = ROOT_PLACEMENT  # where it is computed: one record, replaced whole (kinds.py)
        self.iter_var_attrs: dict[E.IterVar, IterVarAttr] = {}
        self.scope = "global"
        self.scope_given = False  # set_scope / cache_read / cache_write named it (else implied: threads.py)
        self.is_output = False
        # which dataflow rewrite made this stage (cache_read/cache_write/rfactor), for messages
        self.created_by: str | None = None
        # root IterVars that stand for a loop of another stage (rfactor's axis, cache_write's i.c)
        self.derived_from: dict[E.IterVar, str] = {}
        # storage_align (dimension -> (factor, offset)) and set_store_predicate (see hints.py)
        self.dim_align: dict[int, tuple[int, int]] = {}
        self.store_predicate: E.PrimExpr | None = None
        self.double_buffered = False  # double_buffer (see hints.py)
        self.group: Any = None  # the innermost create_group holding it (TVM's Stage.group; see hints.py)
        self.env_thread_axes: list[E.IterVar] = []  # env_threads: a scan's launch threads (threads.py)
        # computeAt by position (seed 003): how many of its loops a producer is computed in
        self.max_producer_pos = 0
        # Tiramisu's commands on the time-space map (see commands.py): loop commands in order,
        # and where the values are stored instead of the stage's own tensor
        self.commands: tuple = ()
        self.storage = None
        self.scan_fold: int | None = None  # a scan's steps kept (storage_fold of its scan axis; te/scan.py)
        self.scan_homes: tuple = ()  # (output, the caller's array) of a scan's states kept in place (scan_storage.py)

    # ---- where it is computed: views of the one placement record -----------------------------
    # (TVM's Stage has attach_type/attach_stage/attach_ivar; code reads them, primitives replace
    # the record; a write to one of them, behind the primitives' back, replaces it too)
    attach_type = PlacementView("kind")
    attach_stage = PlacementView("stage")
    attach_ivar = PlacementView("loop")

    @property
    def compute_at_pos(self) -> int:
        """How many of its outer loops it shares with its readers (computeAt by position)."""
        return self.placement.position

    @property
    def shared_loops(self) -> Mapping[E.IterVar, E.IterVar]:
        """Which of its loops are a host stage's loops (lowered as the host's, not its own)."""
        return self.placement.shared_map

    # ---- naming and lookup -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.op.name

    @property
    def is_placeholder(self) -> bool:
        return self.op.is_placeholder

    def __repr__(self) -> str:
        return f"stage({self.name})"

    def _leaf_names(self) -> str:
        return ", ".join(iv.name for iv in self.leaf_iter_vars) or "none"

    def _check_leaf(self, iv, what: str) -> E.IterVar:
        if not isinstance(iv, E.IterVar):
            raise ScheduleError(
                f"stage {self.name}: {what} expects an axis (IterVar) such as {self.name}.op.axis[0], "
                f"got {iv!r}"
            )
        if iv in self.leaf_iter_vars:
            return iv
        if iv in self.all_iter_vars:
            children = [r for r in self.relations if iv in r.inputs]
            made = ", ".join(c.name for r in children for c in r.outputs)
            raise ScheduleError(
                f"stage {self.name}: cannot {what} axis {iv.name}: it is no longer a loop of {self.name} "
                f"(it was already transformed into {made}); use one of the current loops: {self._leaf_names()}"
            )
        owner = self.schedule.stage_of_iter_var(iv)
        note = self.schedule.iv_notes.get(iv)  # a dataflow rewrite moved or retired it
        if owner is not None:
            where = f"it belongs to stage {owner.name}" + (f" ({note})" if note else "")
        else:
            where = note or "it belongs to no stage of this schedule"
        raise ScheduleError(
            f"stage {self.name}: cannot {what} axis {iv.name}: {where}; the loops of {self.name} are "
            f"{self._leaf_names()}"
        )

    def _new_iv(self, name: str, like: E.IterVar, dtype=None, dom: E.Range | None = None) -> E.IterVar:
        """A loop derived from ``like``. IR is never changed after it is built, so everything the
        IterVar will ever say (its dtype; for a reduction loop its domain, which rfactor makes it
        a root with) is decided here."""
        kind = E.IterVar.REDUCE if like.iter_type == E.IterVar.REDUCE else E.IterVar.DATA_PAR
        iv = E.IterVar(dom if kind == E.IterVar.REDUCE else None, E.Var(name, dtype or like.dtype), kind)
        self.all_iter_vars.append(iv)
        return iv

    def _reduce_doms(self, rel: Relation) -> dict[E.IterVar, E.Range]:
        """The domains the outputs of ``rel`` have from its inputs' domains alone: known for the
        loops of a reduction (nothing a reader asks changes a reduction's range)."""
        from .dataflow import loop_ranges

        if not all(iv.is_reduce and iv.dom is not None for iv in rel.inputs):
            return {}
        probe = SimpleNamespace(relations=[rel], iter_var_attrs={})
        return loop_ranges(probe, list(rel.inputs))  # type: ignore[arg-type]

    # ---- loop transformations ------------------------------------------------------------
    @recorded
    def split(self, parent: E.IterVar, factor=None, nparts=None) -> tuple[E.IterVar, E.IterVar]:
        """Split ``parent`` into an outer and an inner loop; give exactly one of factor/nparts."""
        outside_positions(self, self._check_leaf(parent, "split"), "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(
                f"stage {self.name}: split of {parent.name} needs exactly one of factor= or nparts="
            )
        label = "factor" if factor is not None else "nparts"
        amount = self._split_amount(parent, label, factor if factor is not None else nparts)
        fac, parts = (amount, None) if factor is not None else (None, amount)
        po, pi = E.IterVar(None, parent.var), E.IterVar(None, parent.var)  # probes for the domains
        doms = self._reduce_doms(Split(parent, po, pi, fac, parts))
        outer = self._new_iv(parent.name + ".outer", parent, dom=doms.get(po))
        inner = self._new_iv(parent.name + ".inner", parent, dom=doms.get(pi))
        self.relations.append(Split(parent, outer, inner, fac, parts))
        k = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[k:k + 1] = [outer, inner]
        self._move_attachments(parent, inner)
        self._move_attr(parent, inner)
        return outer, inner

    def _split_amount(self, parent: E.IterVar, label: str, given) -> E.PrimExpr:
        """``given`` as an expression of ``parent``'s dtype: a positive integer, and a constant
        one that the dtype holds (converting ``2**32 + 4`` to int32 would make it 4)."""
        if isinstance(given, int) and not isinstance(given, bool) and given > 0 \
                and given > parent.dtype.max_value():
            raise ScheduleError(
                f"stage {self.name}: split {label} {given} of {parent.name} does not fit {parent.dtype}, the "
                f"dtype of its loop variable (it would wrap around); any {label} of at least the loop's "
                f"extent leaves it whole, so give at most {parent.dtype.max_value()}, or declare "
                "the size int64 (te.var('n', dtype='int64')) for a longer loop")
        amount = convert(given)
        if not amount.dtype.is_integer:
            raise ScheduleError(f"stage {self.name}: split {label} of {parent.name} must be an integer, got {amount}")
        if isinstance(amount, E.IntImm) and amount.value <= 0:
            raise ScheduleError(
                f"stage {self.name}: split {label} of {parent.name} must be positive, got {amount.value}"
            )
        if isinstance(amount, E.IntImm) and amount.value > parent.dtype.max_value():  # a numpy integer
            return self._split_amount(parent, label, amount.value)
        from ..ir.expr import cast

        return cast(amount, parent.dtype)

    @recorded
    def fuse(self, *args: E.IterVar) -> E.IterVar:
        """Fuse adjacent loops (outermost first) into one."""
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        if not args:
            iv = E.IterVar(E.Range(0, 1), E.Var("singleton", "int32"), E.IterVar.DATA_PAR)
            self.all_iter_vars.append(iv)
            self.relations.append(Singleton(iv))
            self.leaf_iter_vars.insert(0, iv)
            return iv
        for a in args:
            outside_positions(self, self._check_leaf(a, "fuse"), "fuse")
        if len({id(a) for a in args}) != len(args):
            raise ScheduleError(f"stage {self.name}: fuse was given the same axis twice")
        fused = args[0]
        for nxt in args[1:]:
            fused = self._fuse2(fused, nxt)
        return fused

    def _fuse2(self, outer: E.IterVar, inner: E.IterVar) -> E.IterVar:
        """Fuse two adjacent loops, given in either order (as TVM does): the fused loop is
        named after the arguments as written and counts the outer loop's iterations outermost.
        A loop made of a reduction axis is a reduction loop (TVM: the larger iteration type)."""
        name = f"{outer.name}.{inner.name}.fused"
        po, pi = self.leaf_iter_vars.index(outer), self.leaf_iter_vars.index(inner)
        if po == pi + 1:
            outer, inner, po, pi = inner, outer, pi, po
        if pi != po + 1:
            raise ScheduleError(
                f"stage {self.name}: cannot fuse {outer.name} and {inner.name}: they are not adjacent "
                f"loops (loop order: {self._leaf_names()}); reorder them next to each other first, "
                f"e.g. s[{self.name}].reorder({outer.name}, {inner.name})"
            )
        dtype = outer.dtype if outer.dtype.bits >= inner.dtype.bits else inner.dtype
        like = inner if inner.is_reduce else outer
        probe = E.IterVar(None, outer.var)
        dom = self._reduce_doms(Fuse(outer, inner, probe)).get(probe)
        fused = self._new_iv(name, like, dtype=dtype, dom=dom)
        self.relations.append(Fuse(outer, inner, fused))
        self.leaf_iter_vars[po:pi + 1] = [fused]
        self._move_attachments(inner, fused)
        self._move_attachments(outer, fused)
        return fused

    @recorded
    def reorder(self, *args: E.IterVar) -> None:
        """Put the given loops in this order, in the positions they occupy together."""
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        for a in args:
            self._check_leaf(a, "reorder")
        seen: set[int] = set()
        for a in args:
            if id(a) in seen:
                raise ScheduleError(
                    f"stage {self.name}: reorder was given axis {a.name} more than once; name each loop once"
                )
            seen.add(id(a))
        pos = sorted(self.leaf_iter_vars.index(a) for a in args)
        for p, a in zip(pos, args):
            self.leaf_iter_vars[p] = a

    @recorded
    def tile(self, x_parent: E.IterVar, y_parent: E.IterVar, x_factor, y_factor):
        """Split two loops and order them ``x.outer, y.outer, x.inner, y.inner``."""
        self._check_leaf(x_parent, "tile")
        self._check_leaf(y_parent, "tile")
        if x_parent is y_parent:
            raise ScheduleError(f"stage {self.name}: tile needs two different axes, got {x_parent.name} twice")
        self._split_amount(x_parent, "factor", x_factor)  # both refused before either loop is split
        self._split_amount(y_parent, "factor", y_factor)
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    # ---- placement -----------------------------------------------------------------------
    @recorded
    def compute_at(self, parent: Stage, scope: E.IterVar | int, mode: str = "standard"):
        """Compute this stage inside loop ``scope`` of ``parent``, only the region it needs there.

        With an int ``scope`` it is seed 003's computeAt by position: this stage (and what must
        move with it) is computed inside ``parent``'s outer ``scope`` loops (negative counts from
        the innermost), ``parent`` need only read it through other stages, and ``mode`` is
        ``"standard"``, ``"best_effort"`` or ``"most_inlined"`` (see ``compute_at_pos.py``)."""
        if not isinstance(parent, Stage):
            parent = self.schedule[parent]
        if isinstance(scope, int) and not isinstance(scope, bool):
            from .compute_at_pos import compute_at_position

            if parent.schedule is not self.schedule:
                raise ScheduleError(f"stage {self.name}: compute_at target {parent.name} is a stage of another "
                                    f"schedule; use this schedule's stage, s[{parent.name}]")
            report = compute_at_position(self.schedule, self, parent, scope, mode)
            self.schedule.position_log.append(report)
            return None
        if parent.schedule is not self.schedule:
            raise ScheduleError(
                f"stage {self.name}: compute_at target {parent.name} is a stage of another schedule; "
                f"use this schedule's stage, s[{parent.name}]"
            )
        if parent is self:
            raise ScheduleError(f"stage {self.name}: cannot compute_at itself; attach it to a stage that reads it")
        if not isinstance(scope, E.IterVar) or scope not in parent.all_iter_vars:
            owner = self.schedule.stage_of_iter_var(scope) if isinstance(scope, E.IterVar) else None
            where = f" (it is an axis of {owner.name})" if owner is not None else ""
            note = self.schedule.iv_notes.get(scope) if isinstance(scope, E.IterVar) else None
            if note:
                where += f" ({note})"
            raise ScheduleError(
                f"stage {self.name}: compute_at target {getattr(scope, 'name', scope)} is not a loop of "
                f"stage {parent.name}{where}; choose one of {parent._leaf_names()}"
            )
        if self.is_placeholder:
            raise ScheduleError(f"stage {self.name} is an input placeholder; it is not computed, so it cannot be moved")
        if scope not in parent.leaf_iter_vars:
            made = ", ".join(o.name for r in parent.relations if scope in r.inputs for o in r.outputs)
            raise ScheduleError(
                f"stage {self.name}: compute_at target {scope.name} is no longer a loop of {parent.name} "
                f"(it was transformed into {made}); attach {self.name} at one of {parent.name}'s loops: "
                f"{parent._leaf_names()}"
            )
        check_placement(self, parent)
        self.placement = Placement.at(parent, scope)

    @recorded
    def compute_root(self) -> None:
        self.placement = ROOT_PLACEMENT

    @recorded
    def inline_at(self, pos: int, best_effort: bool = False, uninlinable=()) -> int:
        """Compute this stage inside its readers' outer ``pos`` loops, as they are now (no replay;
        seed 003's inlineAt), never inside a loop of ``uninlinable``. Never lowers a position
        it already has; returns the position."""
        from .inlining import inline_at

        return inline_at(self.schedule, self, pos, best_effort, uninlinable)

    @recorded
    def compute_with(self, pos: int, reader: Stage | None = None) -> Stage:
        """Compute this stage in a reader's first ``pos`` loops, stored where it is now
        (nvFuser's computeWith; ``storage_point.py``). Returns the reader."""
        from .storage_point import compute_with

        if reader is not None and not isinstance(reader, Stage):
            reader = self.schedule[reader]
        return compute_with(self, pos, reader)

    @recorded
    def compute_inline(self) -> None:
        """Substitute this stage's expression into every reader instead of storing it."""
        why = self.op.inline_refusal()
        if why:
            raise ScheduleError(f"stage {self.name}: {why}")
        if self.is_output:
            raise ScheduleError(
                f"stage {self.name} is an output of the schedule; an output must be stored, so it cannot be inlined"
            )
        self.placement = INLINE_PLACEMENT

    # ---- annotations ---------------------------------------------------------------------
    def _annotate(self, iv: E.IterVar, kind: LoopKind) -> None:
        self._check_leaf(iv, kind)
        if kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED) and iv.is_reduce:
            from .legality import reduction_annotation_error

            raise reduction_annotation_error(self, iv, kind)
        self.iter_var_attrs.setdefault(iv, IterVarAttr()).kind = kind

    @recorded
    def vectorize(self, iv: E.IterVar) -> None:
        self._annotate(iv, LoopKind.VECTORIZED)

    @recorded
    def unroll(self, iv: E.IterVar) -> None:
        """Copy the loop's body once per iteration. Bounded (see ``schedule.unroll_limit``), but
        checked when lowered, not here: a loop's extent is known only after InferBound (a stage
        attached inside a tile loops over the tile, not over its axis's whole domain)."""
        self._check_leaf(iv, "unroll")
        self._annotate(iv, LoopKind.UNROLLED)

    @recorded
    def parallel(self, iv: E.IterVar) -> None:
        self._annotate(iv, LoopKind.PARALLEL)

    @recorded
    def distribute(self, iv: E.IterVar, block: int | None = None) -> None:
        """Split root axis ``iv``'s range over MPI ranks in contiguous blocks (owner computes);
        with ``block``, block-cyclic: blocks of ``block`` values dealt to the ranks in turn.

        Only ``tessel.distributed`` reads this: it derives from the access relations which
        elements every rank must receive from which (``tessel.distributed.plan``) and builds a
        kernel per rank. ``tessel.build`` of the schedule ignores it, so one process computes
        the whole range, the same values. An axis of the operation (``B.op.axis[0]``, or a
        reduce axis: the rank's partial results are then combined by an Allreduce), not one a
        split made: the ranks split the axis as defined, the other steps schedule each rank's
        block.

        **Loop nest** (rank ``r`` of ``P``, blocks of ``n`` rows differing by at most one)::

            for i in 0..n: B[i] = ...   ->   (rank r) for i in lo(r)..hi(r): B[i] = ...
            block=b:                      ->   (rank r) for k in r, r+P, ...: for i in k*b..(k+1)*b: B[i] = ...

        Called on two axes, the ranks form a 2-D grid (P0 x P1, rank r at row r // P1, column
        r % P1; ``tessel.distributed.grid_shape``), each owning a block of both.
        """
        if not isinstance(iv, E.IterVar) or all(iv is not r for r in self.op.root_iter_vars):
            roots = ", ".join(r.var.name for r in getattr(self.op, "root_iter_vars", ())) or "none"
            name = iv.var.name if isinstance(iv, E.IterVar) else repr(iv)
            raise ScheduleError(f"distribute on stage {self.name}: {name} is not an axis of the operation "
                                f"(its axes: {roots}); distribute one of them, e.g. s[{self.name}].distribute("
                                f"{self.name}.op.axis[0]), before or after splitting it")
        done = [a for a in self.iter_var_attrs.values() if a.distributed]
        if len(done) >= 2 or (done and (block is not None or done[0].block is not None)):
            raise ScheduleError(f"distribute on stage {self.name}: the stage is already distributed over "
                                f"{'two axes' if len(done) >= 2 else 'another axis'}; tessel distributes one axis "
                                "(blocks or block-cyclic) or two (a 2-D grid of ranks, contiguous blocks) per stage")
        if self.iter_var_attrs.get(iv) is not None and self.iter_var_attrs[iv].distributed:
            raise ScheduleError(f"distribute on stage {self.name}: axis {iv.var.name} is already distributed")
        if block is not None and (isinstance(block, bool) or not isinstance(block, int) or block < 1):
            raise ScheduleError(f"distribute on stage {self.name}: block={block!r} is not a positive integer; give "
                                "the number of values of each block dealt to the ranks in turn, or leave it out")
        attr = self.iter_var_attrs.setdefault(iv, IterVarAttr())
        attr.distributed, attr.block = True, block

    @property
    def distributed_axis(self) -> E.IterVar | None:
        """The (first) axis ``distribute`` split over the ranks, if any."""
        return next(iter(self.distributed_axes), None)

    @property
    def distributed_axes(self) -> list[E.IterVar]:
        """The axes ``distribute`` split over the ranks, in the operation's order (two: the
        dimensions of a 2-D grid of ranks)."""
        roots = getattr(self.op, "root_iter_vars", ())
        return [iv for iv in roots if self.iter_var_attrs.get(iv) is not None and self.iter_var_attrs[iv].distributed]

    @property
    def distributed_block(self) -> int | None:
        """``distribute``'s block size (block-cyclic), None for one contiguous block per rank."""
        return next((a.block for a in self.iter_var_attrs.values() if a.distributed), None)

    @recorded
    def bind(self, iv: E.IterVar, thread_iv: E.IterVar) -> None:
        self._check_leaf(iv, "bind")
        if not isinstance(thread_iv, E.IterVar) or thread_iv.iter_type != E.IterVar.THREAD:
            raise ScheduleError(f"stage {self.name}: bind needs a te.thread_axis, got {thread_iv!r}")
        attr = self.iter_var_attrs.setdefault(iv, IterVarAttr())
        attr.kind = LoopKind.THREAD_BINDING
        attr.bind_thread = thread_iv

    @recorded
    def pragma(self, iv: E.IterVar, key: str, value=None) -> None:
        """A hint on loop ``iv`` that is not a loop kind of its own (TVM's spellings):

        * ``"auto_unroll_max_step", n``: unroll every serial loop of constant extent in this
          loop's nest (itself included) whose iterations, with those of the loops inside it,
          number at most ``n``;
        * ``"unroll_explicit", True``: accepted for TVM schedules; tessel always unrolls in the
          IR (``False``, leaving it to the C compiler, is refused);
        * ``"debug_skip_region"``: the loop is not run at all, to time a kernel without it;
        * ``"unroll"``, ``"vectorize"``: the loop kind, as ``unroll(iv)`` / ``vectorize(iv)`` (TVM's);
        * ``"import_llvm"`` / ``"import_c"``, code: its functions are compiled and registered for
          the stage's calls (``runtime/imported.py``).

        Any other key is kept, as TVM keeps it: an attribute ``pragma_<key>`` on the loop in the
        lowered IR (value 1 if none is given), for passes or readers of the IR. No tessel pass
        acts on it, and a warning says so, so that a hint without effect is not mistaken for
        one that was honoured.
        """
        self._check_leaf(iv, "pragma")
        if not isinstance(key, str) or not key:
            raise ScheduleError(f"stage {self.name}: pragma on {iv.var.name} needs a key that is a non-empty "
                                f"str, e.g. 'auto_unroll_max_step'; got {key!r}")
        if key in ("unroll", "vectorize"):  # TVM's pragma spells these two loop kinds so
            return getattr(self, key)(iv)
        label = f"stage {self.name}: pragma({iv.var.name}, {key!r}"
        if key == "auto_unroll_max_step":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ScheduleError(f"{label}, {value!r}): the maximum number of unrolled steps must be an "
                                    "int >= 0, e.g. s[C].pragma(xo, 'auto_unroll_max_step', 16)")
        elif key == "unroll_explicit":
            if value is not None and not value:
                raise ScheduleError(f"{label}, {value!r}): tessel always unrolls in the IR, so unrolled loops "
                                    "become straight-line code; drop the pragma or pass True")
        elif key in ("import_llvm", "import_c"):  # code whose functions the stage calls: built with the kernel
            if not isinstance(value, str) or not value.strip():
                raise ScheduleError(f"{label}, ...): the value must be the C or LLVM IR text of the functions, "
                                    f"got {value!r:.60}")
            import_code(key, value, label)
        elif key != "debug_skip_region":
            value = self._kept_pragma(iv, key, value, label)
        self.iter_var_attrs.setdefault(iv, IterVarAttr()).pragmas[key] = value

    def _kept_pragma(self, iv: E.IterVar, key: str, value, label: str):
        """The value of a pragma no pass acts on, as the IR attribute will carry it (warned of)."""
        import warnings

        from ..errors import DefinitionError, TesselWarning

        if value is None:
            value = convert(1)
        elif not isinstance(value, str):
            try:
                value = convert(value)
            except DefinitionError:
                raise ScheduleError(f"{label}, {value!r}): a pragma's value is a number, a string or an "
                                    "expression") from None
        warnings.warn(f"{label}): no tessel pass acts on this pragma; it is kept as the attribute "
                      f"pragma_{key} on the loop in the lowered IR. The ones tessel applies are "
                      "'auto_unroll_max_step', 'unroll_explicit' and 'debug_skip_region'", TesselWarning,
                      stacklevel=4)
        return value

    @recorded
    def tensorize(self, var: E.IterVar, tensor_intrin) -> None:
        """Replace loop ``var`` and the loops inside it by ``tensor_intrin`` (decl_tensor_intrin),
        checked against the computation when lowered (see te/tensor_intrin.py)."""
        from ..te.tensor_intrin import check_tensorize

        self._check_leaf(var, "tensorize")
        check_tensorize(self, var, tensor_intrin)
        attr = self.iter_var_attrs.setdefault(var, IterVarAttr())
        attr.kind, attr.tensor_intrin = LoopKind.TENSORIZED, tensor_intrin

    @recorded
    def storage_align(self, axis: E.IterVar, factor: int, offset: int) -> None:
        """Pad the stride of ``axis``'s dimension of this stage's storage to ``k*factor + offset``."""
        from .hints import storage_align

        storage_align(self, axis, factor, offset)

    @recorded
    def set_store_predicate(self, predicate) -> None:
        """Store only where ``predicate`` (over this stage's axes) holds."""
        from .hints import set_store_predicate

        set_store_predicate(self, predicate)

    @recorded
    def env_threads(self, threads) -> None:
        """Run this scan inside ``threads`` (thread axes with declared ranges), outermost first:
        every step runs in each thread, and the loops of its update bound to those threads are
        those threads (TVM's ``env_threads``)."""
        from .threads import env_threads

        env_threads(self, [threads] if isinstance(threads, E.IterVar) else list(threads))

    @recorded
    def double_buffer(self) -> None:
        """Two copies of this stage's storage on a GPU, one filled while the other is read."""
        from .hints import double_buffer

        double_buffer(self)

    @recorded
    def prefetch(self, tensor, var: E.IterVar, offset) -> None:
        """At the top of loop ``var``, prefetch what ``tensor`` is read ``offset`` iterations on."""
        from .hints import prefetch

        prefetch(self, tensor, var, offset)

    @recorded
    def set_scope(self, scope: str) -> None:
        if scope not in ("global", "local", "shared", "warp"):
            raise ScheduleError(f"stage {self.name}: unknown storage scope {scope!r} (global, local, shared, warp)")
        self.scope, self.scope_given = scope, True

    # ---- Tiramisu's commands (commands.py): steps on the time-space map --------------------
    @recorded
    def after(self, other, level=None) -> None:
        """Run this stage after ``other`` inside their loops up to ``level`` (an IterVar of
        either; None or "root": one after the other, no loop shared), without recomputation."""
        _commands().order(self, other, level, False, "after")

    @recorded
    def before(self, other, level=None) -> None:
        """Run this stage before ``other`` inside their loops up to ``level``."""
        _commands().order(self, other, level, True, "before")

    @recorded
    def then(self, other, level=None) -> Stage:
        """``other`` runs after this stage at ``level``; returns ``other``'s stage, to chain."""
        from .commands import _stage, order

        nxt = _stage(self, other, "then")
        order(nxt, self, level, False, "then")
        return nxt

    @recorded
    def between(self, first, first_level, second, second_level) -> None:
        """Run after ``first`` at ``first_level`` and before ``second`` at ``second_level``."""
        _commands().between(self, first, first_level, second, second_level)

    @recorded
    def shift(self, axis: E.IterVar, amount) -> None:
        """Run iteration ``x`` of loop ``axis`` at time ``x + amount``."""
        _commands().shift(self, axis, amount)

    @recorded
    def skew(self, outer: E.IterVar, inner: E.IterVar, a, b, c=None, e=None) -> None:
        """Consecutive loops ``(i, j) -> (a*i + b*j, c*i + e*j)``, unimodular (``c, e`` by
        default the smallest that make it so)."""
        _commands().skew(self, outer, inner, a, b, c, e)

    @recorded
    def interchange(self, first: E.IterVar, second: E.IterVar) -> None:
        """Swap two loops of the time-space map (each IterVar keeps naming its values)."""
        _commands().interchange(self, first, second)

    @recorded
    def reverse(self, axis: E.IterVar) -> None:
        """Run loop ``axis`` from its last iteration to its first."""
        _commands().reverse(self, axis)

    @recorded
    def store_in(self, buffer, index=None, output=None) -> None:
        """Store this stage's values in ``buffer`` at ``index(*axes)`` (a callable or a list of
        expressions of the stage's axes; None: the same indices); reads follow. Of a scan, the
        steps of its state ``output`` in the caller's array ``buffer``, each over the one before
        (``schedule/scan_storage.py``)."""
        _commands().store_in(self, buffer, index, output=output)

    @recorded
    def storage_fold(self, axis: E.IterVar, factor) -> None:
        """Keep only ``factor`` elements along ``axis``'s dimension of this stage's storage."""
        _commands().storage_fold(self, axis, factor)

    @recorded
    def serial(self, iv: E.IterVar) -> None:
        """Run loop ``iv`` in order again: its vectorize, parallel, unroll or bind is taken off
        (Halide's ``serial``; the fix offered for an annotation legality refuses)."""
        self.iter_var_attrs.pop(self._check_leaf(iv, "serial"), None)

    def copy_into(self, schedule: Schedule) -> Stage:
        """This stage for a copy of its schedule: what primitives change is copied, the IR shared."""
        import copy

        new = copy.copy(self)
        new.schedule = schedule
        new.all_iter_vars = list(self.all_iter_vars)
        new.leaf_iter_vars = list(self.leaf_iter_vars)
        new.relations = list(self.relations)
        new.iter_var_attrs = {iv: dataclasses.replace(a, pragmas=dict(a.pragmas))
                              for iv, a in self.iter_var_attrs.items()}
        new.derived_from = dict(self.derived_from)
        new.env_thread_axes = list(self.env_thread_axes)
        return new

    # ---- keeping attachments and annotations on the loop they were made for ---------------
    def _move_attachments(self, old: E.IterVar, new: E.IterVar) -> None:
        """Stages attached at a loop that is split or fused stay at the loop that replaces it."""
        for st in self.schedule.stages:
            if st.attach_stage is self and st.attach_ivar is old:
                st.placement = st.placement.moved(self, new)

    def _move_attr(self, old: E.IterVar, new: E.IterVar) -> None:
        if old in self.iter_var_attrs:
            self.iter_var_attrs[new] = self.iter_var_attrs.pop(old)

    # ---- derived facts -------------------------------------------------------------------
    def itervar_dag(self):
        """This stage's IterVar-relation DAG (seed 001): roots, relations, leaves in loop order."""
        from .itervar_dag import IterVarDag

        return IterVarDag(self)

    def leaf_kind(self, iv: E.IterVar) -> str:
        attr = self.iter_var_attrs.get(iv)
        return attr.kind if attr else LoopKind.SERIAL

    def relation_of_output(self, iv: E.IterVar) -> Relation | None:
        for r in self.relations:
            if iv in r.outputs:
                return r
        return None

    def is_reduce_leaf(self, iv: E.IterVar) -> bool:
        return iv.iter_type == E.IterVar.REDUCE


def _commands():
    """Tiramisu's commands (``schedule/commands.py``), imported when first used: that module
    builds on this one."""
    from . import commands

    return commands


__all__ = ["INLINE", "ROOT", "SCOPE", "IterVarAttr", "Stage"]
