"""Tiramisu's commands (seed 004, issue 14): schedule steps that act on the time-space map.

TE's primitives (split, fuse, reorder, compute_at) describe a loop nest; the commands here
describe how a stage's instances are placed in one time space shared by all stages, as
Tiramisu does: each is an affine map composed onto the statement's schedule (the 2d+1 map
``tessel.poly.model`` derives from the loop nest), so that what TE cannot say -- two stages in
one loop without recomputation, a loop shifted against another, a skewed wavefront, a loop run
backwards, a value stored where another layout wants it -- is one more step of the schedule.

The commands, and what each does to a statement's schedule ``[s0, d0, s1, d1, ..., sn]``
(``s`` static positions, ``d`` loop coordinates; "level k" is the k-th loop of the stage):

* ``B.after(A, level)``: B shares A's loops up to ``level`` (an IterVar of A or B; None or
  ``"root"``: no loop) and runs after A inside the innermost of them: B's static positions
  before that loop become A's, and the static right after it becomes A's largest there plus one
  (stages after A at that place move one on). ``before`` is the mirror; ``A.then(B, level)`` is
  ``B.after(A, level)`` and returns B (to chain); ``X.between(A, la, C, lc)`` is
  ``X.after(A, la)`` and ``C.after(X, lc)``.
* ``shift(axis, n)``: ``d_k -> d_k + n`` (the iteration runs n steps later);
* ``interchange(i, j)``: swaps the two coordinates (the IterVars follow their values: after
  it, ``i`` names the loop that now carries ``i``);
* ``reverse(axis)``: ``d_k -> -d_k``;
* ``skew(i, j, a, b[, c, e])``: consecutive levels ``(d_i, d_j) -> (a*d_i + b*d_j, c*d_i + e*d_j)``
  with ``a*e - b*c = +-1`` (unimodular; ``c, e`` by default chosen smallest with determinant 1,
  ``(1, 1)`` gives ``(i + j, j)``); ``i`` then names the outer loop, ``j`` the inner one;
* ``store_in(buffer, index)``: the stage's values go to ``buffer[index(axes)]`` instead of its
  own tensor, and every read of it follows (transposed, lower-dimensional, modulo and scalar
  storage; a many-to-one map is the user's promise that the schedule reads each value before it
  is overwritten -- tessel.check decides it from exact dependences);
* ``storage_fold(axis, f)``: ``store_in`` of the stage's own storage with ``axis``'s dimension
  folded to ``f`` elements (index modulo ``f``).

The loop commands are recorded as relations (``relations.Shift``, ``Skew``, ``Interchange``,
``Reverse``: each carries its own arithmetic) in ``stage.commands``, in the order given.
A TE primitive given after a command acts on the loops the command made: ``tile`` after ``skew``
tiles the skewed loops (``tessel.poly.commands.loop_values``; a fuse of them is refused).
A stage with commands is lowered through isl's AST generator (``tessel.lower.poly_ops``);
a schedule without any keeps the interval lowering. Legality of the result is checked after
every command against the exact dependences, by the checking layer (``tessel.check``, asked
through ``checking.Checker``); the build checks the final schedule again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ScheduleError
from ..ir import expr as E
from .checking import checker
from .kinds import INLINE, ROOT, StageBase
from .relations import Interchange, LoopMap, Reverse, Shift, Skew, unimodular_completion

if TYPE_CHECKING:
    from ..te.tensor import Tensor
    from .schedule import Schedule
    from .stage import Stage


# ---- the commands as data ------------------------------------------------------------------
# the loop commands are relations (``relations.LoopMap``: Shift, Skew, Interchange, Reverse),
# each carrying its own arithmetic; orders and storage are recorded here
@dataclass(frozen=True)
class Order:
    """``stage`` runs after (``before``: before) ``anchor`` inside their first ``level`` + 1
    loops (``level`` None: at the root, no loop shared)."""

    stage: Stage
    anchor: Stage
    level: E.IterVar | None
    before: bool = False

    def text(self) -> str:
        where = "root" if self.level is None else self.level.name
        return f"{self.stage.name}.{'before' if self.before else 'after'}({self.anchor.name}, {where})"


@dataclass(frozen=True)
class StoreIn:
    """The stage's values stored in ``buffer`` at ``indices`` (expressions of its axes)."""

    buffer: Tensor
    indices: tuple[E.PrimExpr, ...]
    folded: bool = False  # made by storage_fold: the buffer is the kernel's own temporary
    #: arrays taking turns (``store_in([A, B], ...)``): ``buffer`` stands for them, its first index
    #: choosing one (``buffer[k, ...]`` is ``parts[k][...]``); it is never allocated
    parts: tuple[Tensor, ...] = ()

    def text(self) -> str:
        idx = ", ".join(str(i) for i in self.indices)
        if self.folded:
            return f"storage_fold({self.buffer.name}[{idx}])"
        into = f"[{', '.join(t.name for t in self.parts)}]" if self.parts else self.buffer.name
        return f"store_in({into}, [{idx}])"

    def part(self, t: Tensor) -> int | None:
        """Which of the arrays taking turns ``t`` is (None: not one of them)."""
        return next((k for k, x in enumerate(self.parts) if x is t), None)


def seen_by_caller(stage: Stage) -> bool:
    """Whether the caller sees every value ``stage`` computes: an output, or a stage stored in
    place in a tensor the caller may pass (``store_in`` of a placeholder, not a fold's own
    temporary). Such a stage computes its whole domain, whatever its readers need: the rows
    only its readers skip are writes the caller sees (fuzz F17: an in-place stencil read every
    other row skipped its last row)."""
    s = stage.storage
    return stage.is_output or (s is not None and not s.folded and s.buffer.op.is_placeholder)


# ---- the legality check after each command ------------------------------------------------
def _commit(stage: Stage, command: Any, change: Callable[[], None]) -> None:
    """Apply ``change`` and ask the checker about it (``checking.Checker.after_command``: the
    dependences it breaks, judged by tessel.check); a refusal leaves the schedule as it was,
    and offers its fix only if the fix works from there (fuzz F18: a fix checked where the
    refused command had already been applied was refused in turn). While the checks run,
    ``sch._before_command`` undoes and redoes the change, for a check that compares the
    schedule with what it was (``check.commands``: a command is refused only for what it breaks)."""
    sch = stage.schedule
    saved = [(st, st.commands, st.storage) for st in sch.stages]
    orders = sch.orders

    def restore() -> None:
        for st, cmds, storage in saved:
            st.commands, st.storage = cmds, storage
        sch.orders = orders

    change()
    sch._before_command = (restore, change)
    try:
        checker().after_command(sch, stage, command)
    except ScheduleError as err:
        restore()
        raise _fix_checked_here(sch, err) from None
    except BaseException:
        restore()
        raise
    finally:
        sch._before_command = None


def _fix_checked_here(sch: Any, err: ScheduleError) -> ScheduleError:
    """``err``, without its fix when the fix does not make the schedule as it now is legal."""
    from .fixes import try_fix

    fix = getattr(err, "fix_steps", None)
    if fix is None or try_fix(sch, fix, None) == 2:
        return err
    plain = ScheduleError(str(err).split("\n  suggested fix:")[0], explanation=err.explanation)
    for k, v in vars(err).items():
        if k not in ("fix", "fix_steps", "explanation"):
            setattr(plain, k, v)
    plain.fix_steps = None  # type: ignore[attr-defined]
    return plain


def is_layout(sch: Schedule, storage: StoreIn | None) -> bool:
    """Whether a ``store_in`` only lays values out (Tiramisu's layer III): its buffer is no tensor
    of the program (a fresh placeholder, a fold), so what a read means is still the algorithm's
    value, and legality asks only that no value is overwritten before its last read. A store
    into a tensor of the program (an input, in place) changes what later reads see instead."""
    return storage is not None and (storage.folded or storage.buffer.op not in sch.stage_map)


def storage_choice(sch: Schedule, st: Stage) -> bool:
    """Whether ``st``'s ``store_in`` only chooses where values live rather than what the program
    means. A fold, a buffer no stage of the program reads, and any storage of a recurrence are
    choices: a recurrence's definitions say which values they read (its own, an input's), so
    legality judges the program without the choice and asks only that no value -- its own, or
    an input's -- is overwritten before its last read (``poly.order.fold_conflicts``). A plain
    stage stored into a tensor the program reads is Tiramisu's in-place update instead: its
    reads of that tensor see what is stored there, which is what the program means.
    ``is_layout`` is the lowering's question."""
    if st.storage is None:
        return False
    if st.storage.folded or getattr(st.op, "definitions", ()):
        return True
    buf = st.storage.buffer.op
    return not any(t.op is buf for x in sch.stages for t in x.op.input_tensors())


def has_commands(sch: Schedule) -> bool:
    """Whether any stage of ``sch`` was given a command (then lowering goes through isl)."""
    return bool(sch.orders) or any(st.commands or st.storage is not None for st in sch.stages)


def describe(stage: Stage) -> list[str]:
    """The commands given to ``stage``, as a user wrote them (for the views)."""
    out = [c.text() for c in stage.commands]
    out += [o.text().split(".", 1)[1] for o in stage.schedule.orders if o.stage is stage]
    if stage.storage is not None:
        out.append(stage.storage.text())
    return out


def commands_key(sch: Schedule) -> tuple:
    """The commands of ``sch`` by content and position, for cache keys."""
    pos = {id(st): k for k, st in enumerate(sch.stages)}
    out: list = []
    for st in sch.stages:
        ivs = {id(iv): k for k, iv in enumerate(st.all_iter_vars)}
        cmds = tuple((type(c).__name__, *(ivs.get(id(v), str(v)) if isinstance(v, E.IterVar) else v
                                           for v in vars(c).values())) for c in st.commands)
        store = None
        if st.storage is not None:
            b = st.storage.buffer
            store = (b.name, str(b.dtype), tuple(str(n) for n in b.shape), tuple(str(i) for i in st.storage.indices),
                     st.storage.folded)
        out.append((cmds, store))
    for o in sch.orders:
        lvl = None if o.level is None else next(
            ((pos[id(s)], k) for s in (o.stage, o.anchor) for k, iv in enumerate(s.all_iter_vars) if iv is o.level), None)
        out.append((pos.get(id(o.stage)), pos.get(id(o.anchor)), lvl, o.before))
    return tuple(out)


# ---- checks shared by the commands ----------------------------------------------------------
def _int(stage: Stage, what: str, value: Any) -> int:
    if isinstance(value, E.IntImm):
        value = value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(f"stage {stage.name}: {what} must be a constant int, got {value!r}")
    return value


def _computed(stage: Stage, what: str) -> None:
    from ..te.tensor import ComputeOp

    if not isinstance(stage.op, ComputeOp):
        raise ScheduleError(f"stage {stage.name}: {what} applies to te.compute stages; {stage.name} is a "
                            f"{type(stage.op).__name__}")


def _stage(stage: Stage, other: Any, what: str) -> Stage:
    sch = stage.schedule
    if not isinstance(other, StageBase):
        try:
            other = sch[other]
        except (ScheduleError, AttributeError, TypeError):
            raise ScheduleError(f"stage {stage.name}: {what} expects a stage of this schedule (s[T]) or its "
                                f"tensor, got {other!r}") from None
    if other.schedule is not sch:
        raise ScheduleError(f"stage {stage.name}: {what} target {other.name} is a stage of another schedule; "
                            f"use s[{other.name}]")
    if other is stage:
        raise ScheduleError(f"stage {stage.name}: {what} needs another stage, got {stage.name} itself")
    return other


# ---- loop commands ---------------------------------------------------------------------------
def shift(stage: Stage, axis: E.IterVar, amount: Any) -> None:
    _computed(stage, "shift")
    stage._check_leaf(axis, "shift")
    cmd = Shift(axis, _int(stage, f"the shift of {axis.name}", amount))
    _commit(stage, cmd, lambda: _add(stage, cmd))


def reverse(stage: Stage, axis: E.IterVar) -> None:
    _computed(stage, "reverse")
    stage._check_leaf(axis, "reverse")
    cmd = Reverse(axis)
    _commit(stage, cmd, lambda: _add(stage, cmd))


def interchange(stage: Stage, first: E.IterVar, second: E.IterVar) -> None:
    _computed(stage, "interchange")
    stage._check_leaf(first, "interchange")
    stage._check_leaf(second, "interchange")
    if first is second:
        raise ScheduleError(f"stage {stage.name}: interchange needs two different loops, got {first.name} twice")
    cmd = Interchange(first, second)
    _commit(stage, cmd, lambda: _add(stage, cmd))


def skew(stage: Stage, outer: E.IterVar, inner: E.IterVar, a: Any, b: Any, c: Any = None, e: Any = None) -> None:
    _computed(stage, "skew")
    stage._check_leaf(outer, "skew")
    stage._check_leaf(inner, "skew")
    a, b = _int(stage, "skew factor a", a), _int(stage, "skew factor b", b)
    if outer is inner:
        raise ScheduleError(f"stage {stage.name}: skew needs two different loops, got {outer.name} twice")
    if math.gcd(a, b) != 1:
        raise ScheduleError(f"stage {stage.name}: skew({outer.name}, {inner.name}, {a}, {b}) is not unimodular: "
                            f"a and b must have no common factor (gcd({a}, {b}) = {math.gcd(a, b)}); divide "
                            "them by it, or use (1, 1) for a plain wavefront")
    if (c is None) != (e is None):
        raise ScheduleError(f"stage {stage.name}: skew takes the matrix's second row (c, e) whole or not at all; "
                            f"give both, or neither for the smallest that makes it unimodular")
    if c is None:
        c, e = unimodular_completion(a, b)
    c, e = _int(stage, "skew factor c", c), _int(stage, "skew factor e", e)
    if a * e - b * c not in (1, -1):
        raise ScheduleError(f"stage {stage.name}: skew({outer.name}, {inner.name}, {a}, {b}, {c}, {e}) is not "
                            f"unimodular: a*e - b*c is {a * e - b * c}, must be 1 or -1 (every point of the nest "
                            f"keeps one place); e.g. (c, e) = {unimodular_completion(a, b)}")
    cmd = Skew(outer, inner, a, b, c, e)
    _commit(stage, cmd, lambda: _add(stage, cmd))


def _add(stage: Stage, cmd: LoopMap) -> None:
    stage.commands = (*stage.commands, cmd)


# ---- ordering --------------------------------------------------------------------------------
def order(stage: Stage, anchor: Any, level: Any, before: bool, what: str) -> Stage:
    """``stage`` after (before) ``anchor`` at ``level``; returns the anchor's stage."""
    other = _stage(stage, anchor, what)
    for st in (stage, other):
        _computed(st, what)
        if st.attach_type != ROOT:
            raise ScheduleError(f"stage {stage.name}: {what} orders stages computed at the root; {st.name} is "
                                f"{'inlined' if st.attach_type == INLINE else 'computed inside ' + str(st.attach_stage.name)}"
                                f"; call s[{st.name}].compute_root() first, or order the stage it is computed in")
    lvl = _level(stage, other, level, what)
    cmd = Order(stage, other, lvl, before)

    def change() -> None:
        sch = stage.schedule
        sch.orders = (*[o for o in sch.orders if o.stage is not stage], cmd)

    _commit(stage, cmd, change)
    return other


def _level(stage: Stage, other: Stage, level: Any, what: str) -> E.IterVar | None:
    if level is None or (isinstance(level, str) and level == "root"):
        return None
    if not isinstance(level, E.IterVar):
        raise ScheduleError(f"stage {stage.name}: {what} level must be a loop (IterVar) of {stage.name} or "
                            f"{other.name}, or None / 'root' for no shared loop; got {level!r}")
    if level in stage.leaf_iter_vars or level in other.leaf_iter_vars:
        return level
    owner = stage if level in stage.all_iter_vars else other if level in other.all_iter_vars else None
    if owner is not None:
        owner._check_leaf(level, what)
    raise ScheduleError(f"stage {stage.name}: {what} level {level.name} is not a loop of {stage.name} or "
                        f"{other.name}; their loops are {stage._leaf_names()} and {other._leaf_names()}")


def between(stage: Stage, first: Any, first_level: Any, second: Any, second_level: Any) -> None:
    order(stage, first, first_level, False, "between")
    after = _stage(stage, second, "between")
    order(after, stage, second_level, False, "between")


# ---- storage ---------------------------------------------------------------------------------
def store_in(stage: Stage, buffer: Any, index: Callable | Sequence | None = None, folded: bool = False,
             output: Any = None) -> None:
    from ..te.scan import ScanOp
    from ..te.tensor import Tensor
    from .scan_storage import store_state

    if isinstance(stage.op, ScanOp) and not folded:
        store_state(stage, buffer, index, output)
        return
    if output is not None:
        raise ScheduleError(f"stage {stage.name}: store_in(..., output=) names a state of a scan; {stage.name} is a "
                            f"{type(stage.op).__name__} (give no output=)")
    _computed(stage, "store_in")
    parts: tuple = ()
    if isinstance(buffer, list | tuple):
        parts = tuple(_own_sizes(stage.schedule, t) for t in _parts(stage, buffer))
        buffer = _taking_turns(stage.schedule, parts)
    if not isinstance(buffer, Tensor):
        raise ScheduleError(f"stage {stage.name}: store_in expects a tensor to store into (te.placeholder(shape, "
                            f"dtype, name) for new storage, or an existing tensor), got {buffer!r}")
    op = stage.op
    if op.num_outputs != 1:
        raise ScheduleError(f"stage {stage.name}: store_in applies to a stage with one output; {stage.name} has "
                            f"{op.num_outputs}")
    if buffer.dtype != op.output(0).dtype:
        raise ScheduleError(f"stage {stage.name}: store_in buffer {buffer.name} holds {buffer.dtype}, "
                            f"{stage.name} computes {op.output(0).dtype}; declare the buffer with that dtype")
    if buffer.op is op:
        raise ScheduleError(f"stage {stage.name}: store_in into its own tensor changes nothing; pass another "
                            "tensor, or leave the storage as it is")
    _recurrence_storage(stage, "storage_fold" if folded else "store_in")
    buffer = _own_sizes(stage.schedule, buffer)
    _shared_turns(stage, parts or (buffer,))
    indices = _indices(stage, buffer, index)
    cmd = StoreIn(buffer, indices, folded, parts)

    def change() -> None:
        stage.storage = cmd

    _commit(stage, cmd, change)


def _parts(stage: Stage, buffers: Sequence) -> tuple[Tensor, ...]:
    """The arrays of ``store_in([A, B, ...])``: two or more distinct placeholders of one shape
    and dtype (the caller's arrays; the index's first element chooses one)."""
    from ..te.tensor import Tensor

    if len(buffers) < 2 or not all(isinstance(t, Tensor) for t in buffers):
        raise ScheduleError(f"stage {stage.name}: store_in of a list takes two or more tensors that take turns "
                            f"(store_in([A, B], lambda t, i: (t % 2, i))), got {list(buffers)!r:.120}")
    first = buffers[0]
    for t in buffers:
        if not t.op.is_placeholder:
            raise ScheduleError(f"stage {stage.name}: store_in([...]) takes the caller's arrays (placeholders); "
                                f"{t.name} is computed by the program")
        if t.dtype != first.dtype or len(t.shape) != len(first.shape) or any(
                not _same_size(a, b) for a, b in zip(t.shape, first.shape)):
            raise ScheduleError(f"stage {stage.name}: the arrays of store_in([...]) take turns, so they have one "
                                f"shape and dtype: {t.name} is {t.dtype}{list(t.shape)}, {first.name} "
                                f"{first.dtype}{list(first.shape)}")
    if len({id(t) for t in buffers}) != len(buffers):
        raise ScheduleError(f"stage {stage.name}: store_in([...]) names one array twice; give each once")
    return tuple(buffers)


def _shared_turns(stage: Stage, targets: tuple[Tensor, ...]) -> None:
    """Refuse storing into an array that takes turns with others for another stage, or making
    arrays take turns that another stage is stored in (or a recurrence is written in place
    in): their elements would be one storage under two names, which legality cannot see."""
    for x in stage.schedule.stages:
        if x is stage:
            continue
        mine = x.storage.parts if x.storage is not None and x.storage.parts else ()
        theirs = {id(x.storage.buffer)} if x.storage is not None and not x.storage.parts else set()
        theirs |= {id(x.op.storage(t)) for t in x.op.outputs if callable(getattr(x.op, "storage", None))} \
            if getattr(x.op, "definitions", ()) else set()
        for t in targets:
            if any(p is t for p in mine) or (len(targets) > 1 and id(t) in theirs):
                raise ScheduleError(f"stage {stage.name}: store_in into {t.name} is refused: {x.name} is stored in "
                                    f"{t.name} too, and an array taking turns with others holds one stage's values "
                                    f"only; store one of them elsewhere")


def _same_size(a: Any, b: Any) -> bool:
    from ..ir.functor import structural_equal

    return structural_equal(a, b) or (isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.value == b.value)


def _taking_turns(sch: Schedule, parts: tuple[Tensor, ...]) -> Tensor:
    """The one tensor that stands for ``parts`` (``[k, ...]`` is ``parts[k][...]``), once per
    schedule and list, so that two stages stored in the same arrays share it."""
    from ..te.tensor import placeholder

    memo = sch.__dict__.setdefault("_turns", {})
    key = tuple(map(id, parts))
    if key not in memo:
        first = parts[0]
        name = "|".join(t.name for t in parts)
        memo[key] = (parts, placeholder((len(parts), *first.shape), first.dtype, name=name))
    return memo[key][1]


def _recurrence_storage(stage: Stage, what: str) -> None:
    """The definitions of a recurrence share one storage, that of its last definition (the
    recurrence's tensor): only that stage's storage can be chosen, and it moves every
    definition's; a recurrence written in place already lives in its input."""
    op = stage.op
    defs = getattr(op, "definitions", ())
    if not defs:
        return
    home = op.storage(op.output(0))
    last = defs[-1]
    if home.op.is_placeholder:
        raise ScheduleError(f"stage {stage.name}: {what} of a recurrence written in place is refused: its "
                            f"definitions all live in {home.name}; drop the {what}, or write the recurrence "
                            f"without inplace= and choose the storage of {last.op.name}")
    if op is not last.op:
        raise ScheduleError(f"stage {stage.name}: {what} of one definition of recurrence {last.op.name} is refused: "
                            f"its definitions share one storage; apply it to the recurrence itself: "
                            f"s[{last.op.name}].{what}(...)")


def _indices(stage: Stage, buffer: Tensor, index: Callable | Sequence | None) -> tuple[E.PrimExpr, ...]:
    from ..ir.expr import convert
    from ..ir.functor import free_vars

    axes = [iv.var for iv in stage.op.axis]
    if index is None:
        got: Any = axes
    elif callable(index):
        _check_index_arity(stage, index, len(axes))
        got = index(*axes)
    else:
        got = index
    if isinstance(got, E.PrimExpr | int):
        got = (got,)
    got = tuple(convert(x) for x in got)
    if len(got) != len(buffer.shape):
        raise ScheduleError(f"stage {stage.name}: store_in gives {len(got)} indices for buffer {buffer.name} of "
                            f"{len(buffer.shape)} dimensions; give one index per dimension (none for a scalar)")
    got = _own_axes(stage, got)
    mine = set(axes)
    for k, x in enumerate(got):
        if not x.dtype.is_integer:
            raise ScheduleError(f"stage {stage.name}: store_in index {k} ({x}) is not an integer")
        stray = [v.name for v in free_vars(x) if v not in mine]
        if stray:
            raise ScheduleError(f"stage {stage.name}: store_in index {k} ({x}) uses {', '.join(stray)}, which are "
                                f"not axes of {stage.name}; an index is a function of {', '.join(v.name for v in axes)}")
    return got


def _check_index_arity(stage: Stage, index: Callable, n: int) -> None:
    """An index function takes one argument per axis of the stage; said before calling it."""
    import inspect

    try:
        inspect.signature(index).bind(*range(n))
    except ValueError:
        return  # no signature to read (a builtin): the call itself decides
    except TypeError:
        names = ", ".join(iv.var.name for iv in stage.op.axis)
        raise ScheduleError(f"stage {stage.name}: store_in's index function must take {n} argument(s), one per axis "
                            f"of {stage.name} ({names}), e.g. lambda {names}: (...)") from None


def _own_sizes(sch: Schedule, buffer: Tensor) -> Tensor:
    """A new buffer whose shape names sizes of another copy of the computation (a replayed
    step onto fresh tensors) is remade over this schedule's sizes, by name, once per schedule
    (two stages stored in one buffer keep sharing it)."""
    from ..ir.functor import free_vars, substitute
    from ..te.tensor import placeholder
    from .assume import size_vars

    if buffer.op in sch.stage_map or not buffer.op.is_placeholder:
        return buffer
    sizes = {v.name: v for v in size_vars(sch)}
    stray = {v for n in buffer.shape for v in free_vars(n) if v not in sizes.values()}
    if not stray or any(v.name not in sizes for v in stray):
        return buffer
    memo = sch.__dict__.setdefault("_store_buffers", {})
    if id(buffer) not in memo:
        shape = [substitute(n, {v: sizes[v.name] for v in stray}) for n in buffer.shape]
        memo[id(buffer)] = (buffer, placeholder(shape, buffer.dtype, name=buffer.name))
    return memo[id(buffer)][1]


def _own_axes(stage: Stage, index: tuple[E.PrimExpr, ...]) -> tuple[E.PrimExpr, ...]:
    """Indices written over the axes of another copy of the same computation (a replayed step:
    the recorded expressions name the original's axes) taken onto this stage's, by name."""
    from ..ir.functor import free_vars, substitute

    axes = {iv.var.name: iv.var for iv in stage.op.axis}
    if len(axes) != len(stage.op.axis):
        return index
    mine = set(axes.values())
    stray = {v for x in index for v in free_vars(x) if v not in mine}
    if not stray or any(v.name not in axes or axes[v.name].dtype != v.dtype for v in stray):
        return index
    return tuple(substitute(x, {v: axes[v.name] for v in stray}) for x in index)


def storage_fold(stage: Stage, axis: E.IterVar, factor: Any) -> None:
    from ..te.scan import ScanOp
    from ..te.tensor import placeholder

    if isinstance(stage.op, ScanOp):
        _fold_scan(stage, axis, factor)
        return
    _computed(stage, "storage_fold")
    axes = list(stage.op.axis)
    if axis not in axes:
        raise ScheduleError(f"stage {stage.name}: storage_fold folds a dimension of the stored tensor: give one of "
                            f"its axes ({', '.join(iv.name for iv in axes)}), got {getattr(axis, 'name', axis)!r}")
    f = _int(stage, f"the fold of {axis.name}", factor)
    if f <= 0:
        raise ScheduleError(f"stage {stage.name}: storage_fold({axis.name}, {f}): the fold must be positive")
    k = axes.index(axis)
    out = stage.op.output(0)
    shape = [f if j == k else n for j, n in enumerate(out.shape)]
    buf = placeholder(shape, out.dtype, name=f"{out.name}.folded")
    index = [iv.var % f if j == k else iv.var for j, iv in enumerate(axes)]
    store_in(stage, buf, index, folded=True)


def _fold_scan(stage: Stage, axis: E.IterVar, factor: Any) -> None:
    """A scan keeps its last ``factor`` steps (step ``t`` at ``t % factor``): legal when the
    update reads back fewer steps, the init has no more, and what reads the scan afterwards
    reads only its last ones (``ScanOp.least_fold``, exact for constant step offsets)."""
    op = stage.op
    if axis is not op.scan_axis:
        raise ScheduleError(f"stage {stage.name}: storage_fold of a scan folds its steps: give its scan axis "
                            f"(s[{stage.name}].op.scan_axis), got {getattr(axis, 'name', axis)!r}")
    f = _int(stage, f"the fold of {axis.name}", factor)
    readers = [st.op for st in stage.schedule.stages
               if any(t.op is op for t in st.op.input_tensors()) and st.op not in op.body_ops()]
    need, why = op.least_fold(readers)
    if need == 0 or f < need:
        fix = f" (the least that does: s[{stage.name}].storage_fold(s[{stage.name}].op.scan_axis, {need}))" if need else ""
        raise ScheduleError(f"stage {stage.name}: storage_fold({axis.name}, {f}) is refused: the scan must keep "
                            f"{'every step' if not need else f'{need} step(s)'}, as {why}{fix}")
    stage.scan_fold = f


__all__ = ["Interchange", "Order", "Reverse", "Shift", "Skew", "StoreIn", "between", "commands_key", "describe",
           "has_commands", "storage_choice", "interchange", "is_layout", "order", "reverse", "seen_by_caller",
           "shift", "skew",
           "storage_fold", "store_in", "unimodular_completion"]
