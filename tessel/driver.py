"""The pipeline, in order: schedule -> InferBound -> ScheduleOps -> passes -> codegen -> runtime.

The passes are data (:mod:`tessel.pipeline`): ``FRONT_PASSES`` make the loop nest of a
bounded schedule, ``FAST_PASSES`` then fit it to the target, and ``TARGET_PASSES`` add the
target's own; all are read when a lowering runs. ``lower`` keeps the IR after each step and can show it with the time the step took
(``trace=True`` or ``TESSEL_DEBUG=1``), which is also how tests look at one step (e.g. the
ScheduleOps listing that seed 000 prints). Whatever watches the pipeline (the suite's replay
check, a profiler) is an ``Instrument`` in ``pipeline.INSTRUMENTS``, never a patch of a
function here.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager

from . import pipeline, tunables
from .bound.infer import BoundContext
from .check import verify as verify_schedule
from .codegen import Generated, generate
from .deep import deep_stack
from .errors import BuildError, DefinitionError, LowerError, TesselError
from .ir import expr as E
from .ir import stmt as S
from .ir.fingerprint import Unhashable, fingerprint
from .ir.functor import collect, depth, free_vars
from .lower import schedule_ops
from .passes.unroll import oversized_unrolls
from .pipeline import Bounded, PassContext, Step, run_passes
from .poly.analysis import analysis, content_key, own_memo, remember, retire, state_key
from .poly.exact import ExactPlan
from .poly.exact import plan as exact_plan
from .runtime.cache import code_version, load_lowered, store_lowered
from .schedule.commands import has_commands
from .schedule.schedule import Schedule
from .schedule.unroll_limit import unroll_limit_error, unrolled_owner
from .target import Target, as_target, backend, resolve
from .te.tensor import Tensor


def _params(args: Sequence) -> tuple[dict, list[S.Buffer], list[E.Var], list[tuple[int, E.Var]]]:
    """The buffers of the tensor arguments, the size vars (those their shapes name, then the
    scalar arguments that no shape names) and the scalar arguments with their call positions."""
    buffers: dict[Tensor, S.Buffer] = {}
    order: list[S.Buffer] = []
    sizes: list[E.Var] = []
    scalars: list[tuple[int, E.Var]] = []
    for k, a in enumerate(args):
        if isinstance(a, E.Var):
            scalars.append((k, _scalar_arg(k, a, scalars)))
            continue
        if not isinstance(a, Tensor):
            raise LowerError(
                f"argument {k} of lower/build is {a!r}; arguments are the tensors the kernel reads and "
                "writes and the scalars it takes (te.var(name, dtype)); symbolic sizes are bound from shapes"
            )
        if a in buffers:
            raise LowerError(f"tensor {a.name} appears twice in the argument list")
        buf = S.Buffer(a.name, a.dtype, a.shape)
        buffers[a] = buf
        order.append(buf)
        for dim in a.shape:
            for v in sorted(free_vars(dim), key=lambda v: v.name):
                if v not in sizes:
                    sizes.append(v)
    sizes += [v for _, v in scalars if v not in sizes]
    return buffers, order, sizes, scalars


def _scalar_arg(k: int, v: E.Var, earlier: list[tuple[int, E.Var]]) -> E.Var:
    """A scalar kernel argument (TVM: a Var in the argument list), passed by value."""
    if v.dtype.lanes != 1 or not (v.dtype.is_int or v.dtype.is_uint or v.dtype.is_float or v.dtype.is_bool):
        raise LowerError(f"argument {k} of lower/build, scalar {v.name!r}, has dtype {v.dtype}; a scalar "
                         "argument is one number (an int, uint, float or bool dtype)")
    if any(w is v for _, w in earlier):
        raise LowerError(f"scalar {v.name!r} appears twice in the argument list")
    return v


# stage count plus the summed depth of the stages' expressions (an upper bound on any inlined
# expression's depth) past which a program goes to tessel.deep's big stack without a first try:
# an ordinary program stays far below it, one that would recurse past Python's limit does not
DEEP_PROGRAM = 200


def _is_deep(sch, *_args, **_kwargs) -> bool:
    """Cheap (one memoized, non-recursive walk per stage), so a 1,000-stage chain or a
    10,000-term body is lowered once on the big stack instead of failing first."""
    stages = getattr(sch, "stages", None)
    if not isinstance(stages, list):
        return False  # not a schedule: the entry point itself says what is wrong
    total = len(stages)
    for st in stages:
        body = getattr(st.op, "body", ())
        for e in body if isinstance(body, tuple) else ():  # an extern's body is one statement
            if isinstance(e, E.PrimExpr):
                total += depth(e, DEEP_PROGRAM)
            if total > DEEP_PROGRAM:
                return True
    return False


@deep_stack("lower_steps", _is_deep)
def lower_steps(sch: Schedule, args: Sequence, name: str = "main", vector_bytes: int | None = None,
                target: str | Target | None = None, exact: bool = True) -> tuple[S.PrimFunc, list[Step]]:
    """Lower for ``target`` (by default this machine's C target; ``vector_bytes`` overrides
    its vector width) and keep the IR after every step. ``exact``: every stage computes the
    exact region its readers need (``tessel.poly.exact``); False keeps InferBound's boxes."""
    _check_build_args(sch, args, name, "lower")
    tgt = resolve(as_target(target))
    if vector_bytes is not None:
        tgt = tgt.with_(vector_bytes=vector_bytes)
    front, steps = _lower_schedule(sch, args, name, exact)
    func = _fast_passes(front, steps, tgt)
    if os.environ.get("TESSEL_DEBUG"):
        for st in steps:
            print(f"---- after {st.name} ({st.seconds * 1e3:.1f} ms) ----\n{st.ir}")
    return func, steps


def _bound(sch: Schedule, args: Sequence, name: str, check: bool = True) -> Bounded:
    verify_schedule(sch)  # an illegal schedule is explained (and a fix proposed) before anything is derived from it
    # a rewrite (cache_write, rfactor, a cache_read's reader) replaces a stage's tensors; the user's own
    # tensors stand for the current ones
    args = [sch.current_tensor(a) if isinstance(a, Tensor) else a for a in args]
    buffers, params, sizes, scalars = _params(args)
    if check:
        analysis(sch).check_bounds()  # reads outside a tensor, refused exactly with a witness (seed 004)
    return Bounded(analysis(sch).bound, name, buffers, params, sizes, scalars)


def _lower_schedule(sch: Schedule, args: Sequence, name: str, exact: bool = True,
                    keep: list | None = None, check: bool = True) -> tuple[S.PrimFunc, list[Step]]:
    """The schedule as loops over flat buffers: every step that reads the schedule.
    ``keep``: a list that gets the schedule as bounded (for an exact lowering made later).
    ``check=False``: the out-of-bounds check is the caller's to run (``build`` runs it only
    when its memo has no code for the program)."""
    b = _bound(sch, args, name, check)
    if keep is not None:
        keep.append(b)
    out = _lower_bounded(b, exact_plan(b.ctx) if exact and _exact_applies(b.ctx) else None)
    if pipeline.INSTRUMENTS:
        _report_front(sch, args, out[0], lambda s2, a2: _lower_schedule(s2, a2, name, exact, None, check)[0])
    return out


_reporting = threading.local()


def _report_front(sch: Schedule, args: Sequence, func: S.PrimFunc, again: Callable) -> None:
    """Tell the instruments about a lowered front; a lowering an instrument asks for (the
    replayed schedule) is not reported again."""
    if getattr(_reporting, "busy", False):
        return
    _reporting.busy = True
    try:
        for ins in list(pipeline.INSTRUMENTS):
            ins.after_front(sch, args, func, again)
    finally:
        _reporting.busy = False


def _exact_applies(ctx: BoundContext) -> bool:
    """Whether the exact regions may replace InferBound's boxes. Not for stages sharing a host's
    loops (computeAt by position): the exact analysis does not follow loops taken from another
    stage; nor with thread-bound loops, whose regions are InferBound's by their storage scope
    (schedule/threads.py: a loop of a thread is the thread's value, not a loop of its own); nor
    with Tiramisu's commands, which lower through isl's AST on their own (lower/poly_ops.py)."""
    return not ctx.boxes and not ctx.binds and not has_commands(ctx.sch)


def _lower_bounded(b: Bounded, plan: ExactPlan | None) -> tuple[S.PrimFunc, list[Step]]:
    steps: list[Step] = []
    assumed = b.ctx.sch.assumption_exprs()
    stmt = run_passes(pipeline.FRONT_PASSES, None, PassContext(bounded=b, plan=plan, assumed=assumed), steps)
    _check_free_vars(stmt, b.sizes + [t.var for t in b.ctx.binds.values()])
    _check_unrolls(b.ctx.sch, stmt)
    return S.PrimFunc(b.name, b.params, b.sizes, stmt, scalar_args=b.scalars,
                      assumptions=tuple(zip(b.ctx.sch.assumptions, assumed))), steps


def _fast_passes(front: S.PrimFunc, steps: list[Step], target: Target) -> S.PrimFunc:
    """``pipeline.FAST_PASSES``, then the target's own passes, on the front's body for ``target``."""
    ctx = PassContext(assumed=[c for _, c in front.assumptions], front=front, target=target)
    passes = pipeline.FAST_PASSES + pipeline.TARGET_PASSES.get(target.kind, ())
    stmt = run_passes(passes, front.body, ctx, steps)
    written = {id(s.buffer) for s in collect(stmt, lambda n: isinstance(n, S.BufferStore), statements_only=True)}
    outputs = [b for b in front.params if id(b) in written]
    return S.PrimFunc(front.name, front.params, front.size_vars, stmt, outputs, ctx.guards, front.scalar_args,
                      front.assumptions)


def _check_unrolls(sch: Schedule, stmt: S.Stmt) -> None:
    """Refuse a loop the user unrolled whose straight-line code would pass the limit (see
    ``schedule.unroll_limit``), now that InferBound has given every loop its extent."""
    for loop, extent, body in oversized_unrolls(stmt, tunables.current().max_unroll_statements):
        owner = unrolled_owner(sch.stages, loop.loop_var)
        if owner is not None:  # else auto_unroll_max_step marked it: the unroll pass keeps it a loop
            raise unroll_limit_error(owner[0], owner[1], extent, body)


def _check_free_vars(stmt: S.Stmt, sizes: list[E.Var]) -> None:
    bound: set[E.Var] = set(sizes)
    used: set[E.Var] = set()
    for node in collect(stmt, lambda n: isinstance(n, S.For | S.LetStmt | E.Let | E.Var)):  # one walk
        if isinstance(node, E.Var):
            used.add(node)
        else:
            bound.add(node.loop_var if isinstance(node, S.For) else node.var)
    missing = sorted({v.name for v in used if v not in bound})
    if missing:
        raise LowerError(
            f"the kernel uses the symbolic size(s) or scalar(s) {', '.join(missing)}, but no argument has "
            "them in its shape, so they could not be bound at call time: pass a tensor whose shape uses "
            "them, or the variable itself in the argument list (a scalar argument, as in TVM)"
        )


@deep_stack("lower", _is_deep)
def lower(sch: Schedule, args: Sequence, name: str = "main", simple_mode: bool = False, trace: bool = False,
          target: str | Target | None = None, exact: bool = True):
    """The lowered kernel; with ``simple_mode`` just its body (what ``print`` shows is the IR).
    ``exact=False``: InferBound's interval regions instead of the exact ones."""
    func, steps = lower_steps(sch, args, name, target=target, exact=exact)
    _remember_lowering(sch, args, name, resolve(as_target(target)), exact, func)
    if trace:
        for st in steps:
            print(f"---- after {st.name} ({st.seconds * 1e3:.1f} ms) ----\n{st.ir}")
    return func.body if simple_mode else func


@deep_stack("build", _is_deep)
def build(sch: Schedule, args: Sequence, target: str | Target | None = "c", name: str = "main",
          exact: bool = True):
    """Compile the schedule into a callable on NumPy arrays (outputs are written in place).

    ``target``: a :class:`~tessel.target.Target`, a target string (``"c"``, ``"python"``,
    ``"c -vector-bytes=32"``) or None (this machine's C target). ``exact``: every stage computes
    exactly the region its readers need (isl sets, ``tessel.poly.exact``); False keeps the
    interval boxes of InferBound.

    A target whose generated code is plain data (C) has it remembered (on disk, beside the
    compiled kernels) under a hash of the interval-lowered IR, ``exact``, the target's
    description and tessel's own code: a later build of the same kernel, in this process or
    another, skips the exact analysis, the last passes and the code generator, which are most
    of a cached build's time. (The interval IR decides the exact one: the analysis reads only
    the loops, guards, reads and attachments that IR spells out.)"""
    with _collector_paused():
        return _build(sch, args, target, name, exact)


_PAUSE_LOCK = threading.Lock()
_paused = {"builds": 0, "was_on": False}  # builds under way in any thread, and the setting before the first


@contextmanager
def _collector_paused():
    """Python's cyclic collector off while builds run: lowering makes many short-lived IR
    objects, each few thousand of them start a collection, and now and then one that walks the
    whole heap. In a process that also holds PyTorch, TVM and Halide (the benchmark's, a
    tuner's) that walk cost a cold build up to 0.2 s of its 0.1 s of lowering. The collector is
    process-wide, so builds in several threads share one pause: the first to start records the
    caller's setting, the last to finish restores it; the cycles they left are collected then."""
    with _PAUSE_LOCK:
        if _paused["builds"] == 0:
            _paused["was_on"] = gc.isenabled()
            gc.disable()
        _paused["builds"] += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _paused["builds"] -= 1
            if _paused["builds"] == 0 and _paused["was_on"]:
                gc.enable()


def _build(sch: Schedule, args: Sequence, target: str | Target | None, name: str, exact: bool):
    _check_build_args(sch, args, name)
    tgt = as_target(target)
    back = backend(tgt)
    tgt = resolve(tgt)
    _refuse_serial_threads(sch, tgt)
    func = _remembered_lowering(sch, args, name, tgt, exact)
    if func is not None:  # lowered just now (auto_schedule checks the schedule it returns that way)
        return build_func(func, tgt)
    if not back.memo or os.environ.get("TESSEL_DEBUG"):
        func, _ = lower_steps(sch, args, name, target=tgt, exact=exact)
        return build_func(func, tgt)
    kept: list[Bounded] = []
    try:
        front, steps = _lower_schedule(sch, args, name, exact=False, keep=kept, check=False)
    except TesselError:
        analysis(sch).check_bounds()  # the refusal a fresh build gives first, if it is one
        raise
    key = _memo_key(sch, tgt, exact, front)
    plan = load_lowered(key, len(front.params)) if key else None
    # the index guards of symbolic sizes come out of the last pass; the calling convention
    # needs them, so the memo keeps them beside the code
    guarded = _with_guards(front, plan["guards"]) if plan is not None and plan["name"] == name else None
    final = _ExactFront(kept[0], front, steps) if exact else None
    if guarded is not None:
        gen = Generated.from_plan(tgt.kind, plan)
        return back.load(guarded, gen, tgt, finish=lambda: _fast_passes(final() if final else front, [], tgt))
    analysis(sch).check_bounds()  # a miss: no build of this very program has passed it yet
    if final is not None:
        front, steps = final(), final.steps
    func = _fast_passes(front, steps, tgt)
    gen = generate(back.generate, func, tgt)
    if key:
        store_lowered(key, {**gen.plan(), "guards": _guards_text(func)})
    return back.load(func, gen, tgt)


def _refuse_serial_threads(sch: Schedule, tgt: Target) -> None:
    """The CPU targets run thread loops one after another; refuse a schedule whose threads
    communicate, where that would compute something else (never a silently wrong value)."""
    from .lower.thread_nest import free_thread_vars, serial_refusal
    from .schedule.threads import bind_map

    if tgt.kind not in ("c", "python") or not bind_map(sch.stages):
        return
    verify_schedule(sch)
    ctx = analysis(sch).bound
    why = serial_refusal(ctx)
    if why is None:
        loose = free_thread_vars(schedule_ops(ctx), ctx.binds.values())
        if loose:
            why = (f"the thread index(es) {', '.join(loose)} are used outside the loops bound to them (a "
                   "store predicate on a thread, or storage private to each thread used before its loop), "
                   "where each thread has its own value")
    if why is not None:
        raise BuildError(f"target {tgt.kind!r} runs thread-bound loops one after another, which computes "
                         f"what the GPU threads compute only when they do not communicate; here {why}. Build "
                         "with target=\"cuda-sim\" to run it with GPU semantics on the CPU (or target=\"cuda\")")


def _guards_text(func: S.PrimFunc) -> str:
    """``func``'s index guards with the sizes they speak of, for the memo ("" when none)."""
    if not func.guards:
        return ""
    from .ir.serialize import save_json

    return save_json((tuple(func.size_vars), tuple(func.guards)))


def _with_guards(front: S.PrimFunc, text: str) -> S.PrimFunc | None:
    """``front`` with the remembered guards, over its own size variables; None when the
    document does not fit it (then the build runs afresh)."""
    if not text:
        return front
    from .ir.functor import substitute
    from .ir.serialize import load_json

    try:
        sizes, guards = load_json(text)
    except TesselError:
        return None
    if len(sizes) != len(front.size_vars) or any(
            not isinstance(a, E.Var) or a.name != b.name or a.dtype != b.dtype for a, b in zip(sizes, front.size_vars)):
        return None
    same = dict(zip(sizes, front.size_vars))
    guards = tuple(substitute(g, same) for g in guards)
    if not all(isinstance(g, S.IndexGuard) for g in guards):
        return None
    return S.PrimFunc(front.name, front.params, front.size_vars, front.body, front.outputs, guards,
                      front.scalar_args, front.assumptions)


def _memo_key(sch: Schedule, tgt: Target, exact: bool, front: S.PrimFunc) -> str | None:
    """The key of the code remembered for a build, None when something cannot be hashed.

    A hit skips the out-of-bounds check, so the key holds everything the check reads: the
    schedule's content (``content_key``: every stage's operation and body, attachment,
    relations, annotations and the assumptions), not only the flattened IR, in which an
    out-of-bounds ``A[0, j + 1]`` and an in-bounds ``A[(j + 1)//4, (j + 1)%4]`` read the same.
    Code is stored only by a build that passed the check, so a hit is a program found clean."""
    content = content_key(sch)
    if content is None or not pipeline.standard():
        return None
    try:
        return fingerprint(code_version(), _target_key(tgt), _tunables(), exact, front, content,
                           tuple(sch.assumptions))
    except Unhashable:
        return None


# The last lowering of each schedule, which ``build`` takes instead of lowering again when it
# is asked for the same schedule in the same state with the same arguments, name, target and
# ``exact``: ``auto_schedule`` lowers the schedule it returns to know that it lowers, and its
# caller builds it next (half of such a build's own work). ``lower`` runs every check a build
# runs (the out-of-bounds refusal included), so what it returned is what the build would make.
# It is stored on the schedule itself (``own_memo``), so it dies with the schedule.
_LOWERED = "_memo_lowering"


def _lowering_key(sch: Schedule, args: Sequence, name: str, tgt: Target, exact: bool) -> tuple[tuple, list]:
    """The state of the schedule (``state_key``: its stages, relations, attachments and
    annotations by object, and how many primitives its history recorded), the arguments by
    object, and every input of the passes after the schedule; with the objects whose ids the key
    holds (kept alive beside it, so an id can never come to mean another object)."""
    state, refs = state_key(sch)
    history = getattr(sch, "history", None)
    passes = pipeline.lists()
    key = (state, len(history) if history is not None else -1, tuple(map(id, args)), name, _target_key(tgt),
           exact, _tunables(), tuple(map(id, passes)))
    return key, [*refs, *args, passes]


def _remember_lowering(sch: Schedule, args: Sequence, name: str, tgt: Target, exact: bool,
                       func: S.PrimFunc) -> None:
    if os.environ.get("TESSEL_DEBUG") or not isinstance(sch, Schedule):
        return
    key, refs = _lowering_key(sch, args, name, tgt, exact)
    remember(sch, _LOWERED, key, refs, func)


def _remembered_lowering(sch: Schedule, args: Sequence, name: str, tgt: Target, exact: bool) -> S.PrimFunc | None:
    if os.environ.get("TESSEL_DEBUG") or not isinstance(sch, Schedule) or getattr(sch, _LOWERED, None) is None:
        return None
    return own_memo(sch, _LOWERED, _lowering_key(sch, args, name, tgt, exact)[0])  # type: ignore[return-value]


def forget_lowerings() -> None:
    """Forget the lowerings ``build`` would take (a cold build measured after a lowering)."""
    retire(_LOWERED)


class _ExactFront:
    """The exact lowering, made when first asked for (a build whose code is remembered never
    asks); the interval one where the exact analysis changes nothing."""

    def __init__(self, bounded: Bounded, front: S.PrimFunc, steps: list[Step]):
        self.bounded, self.front, self.steps = bounded, front, steps
        self.done = False

    def __call__(self) -> S.PrimFunc:
        if not self.done:
            plan = exact_plan(self.bounded.ctx) if _exact_applies(self.bounded.ctx) else None
            if plan is not None and plan.changed:
                self.front, self.steps = _lower_bounded(self.bounded, plan)
            self.done = True
        return self.front


def build_func(func: S.PrimFunc, target: str | Target | None = "c"):
    """Generate code for one lowered PrimFunc and load it as a kernel, through ``target``'s backend."""
    tgt = as_target(target)
    back = backend(tgt)
    tgt = resolve(tgt)
    passes = pipeline.TARGET_PASSES.get(tgt.kind, ())
    if passes:  # the target's own passes, which a function lowered elsewhere (or by hand) has not had
        body = run_passes(passes, func.body, PassContext(front=func, target=tgt), [])
        if body is not func.body:
            func = func.with_body(body)
    return back.load(func, generate(back.generate, func, tgt), tgt)


def _check_build_args(sch, args, name, what: str = "build") -> None:
    """Refuse what ``build``/``lower`` cannot use before any work, each with what to pass instead.
    The name is data (it never becomes a file name or a compiler argument), so any text is
    accepted but NUL, which no C tool can carry."""
    if not isinstance(sch, Schedule):
        raise DefinitionError(f"{what}(sch, args): sch must be a schedule (te.create_schedule(...)), "
                              f"got {type(sch).__name__}")
    if isinstance(args, str | bytes | Tensor) or not isinstance(args, Sequence):
        raise DefinitionError(f"{what}(sch, args): args must be a list of the tensors the kernel reads and "
                              f"writes, e.g. [A, B], got {args!r:.80}")
    if not isinstance(name, str):
        raise DefinitionError(f"{what}(..., name={name!r:.80}): the kernel name must be a str, "
                              f"got {type(name).__name__}")
    if "\0" in name:
        raise BuildError(f"{what}(..., name={name!r:.80}): the kernel name contains a NUL character, "
                         "which C cannot carry; pass a name without it")


def _target_key(tgt: Target) -> tuple:
    """The target's every field, unambiguously (its description string may read the same for
    two targets: ``features={"a,b"}`` and ``{"a", "b"}``)."""
    return (tgt.kind, tgt.vector_bytes, tuple(sorted(tgt.features or ())), tgt.mcpu, tgt.compiler,
            tuple(tgt.flags), tgt.device)


def _tunables() -> tuple:
    """The limits builds use now (``tessel.tunables``): part of the memo's key, because a program
    (or a test) may change them at run time, which the hash of tessel's source cannot see."""
    return tunables.current().key()

