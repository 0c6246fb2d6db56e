"""What ``auto_schedule`` chose and why, one line per stage (``AutoResult.summary()``).

A schedule printed as Python (``s.python()``) says what was done, step by step, but not why, and
not what it amounts to: how many iterations the threads share, which loop runs as vectors,
where a producer is computed. A user who wonders whether the result is any good (a parallel
loop of two iterations on a 16-core machine, a reduction left scalar) needs those facts, read
off the bounded schedule itself rather than off the plan's intentions, so that a rule tessel
refused (``rules._attempt`` drops it whole) or a fallback level shows as what it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..bound import infer_bound
from ..ir import expr as E
from ..ir.kinds import LoopKind
from ..schedule.schedule import Schedule
from .plan import Anchor, Plan

if TYPE_CHECKING:
    from . import AutoResult

#: why the plan gave an anchor its rules, by kind (plan.py's module docstring says more)
_WHY = {
    "tile": "a reduction that reuses its operands in two directions: a register tile, its operands in cache",
    "rows": "rows computed apart: threads over the rows, the row vectorized",
    "stream": "a one-dimensional stream: threads over chunks, each chunk vectorized",
}
_SHOWN = (LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED)


def summary(result: AutoResult) -> list[str]:
    """One line for the whole (level, search), then one per stage the user defined."""
    s, plan = result.schedule, result.plan
    ranges = infer_bound(s)
    head = f"auto_schedule: {_level(result.level)}"
    if result.tuned is not None:
        t = result.tuned
        head += f"; searched {t.trials} schedule(s), the best {t.cost * 1e3:.3g} ms a call"
    lines = [head]
    roles = _roles(plan)
    for st in s.stages:
        if st.op.is_placeholder:
            continue
        lines.append(f"{st.name}: {_placement(st)}{_loops(st, ranges)}{roles.get(st.op.name, '')}")
    return lines


def _level(level: str) -> str:
    return {"full": "every rule applied",
            "no_tile": "no register tiles (the tiled schedule did not lower)",
            "inline_only": "only inlining (the plan's schedule did not lower)",
            "none": "the default schedule (no rule's schedule lowered)"}.get(level, level)


def _roles(plan: Plan) -> dict[str, str]:
    """Why each planned operation is where it is, by name: a rule may replace a stage's
    operation (``cache_write`` of a tile), not its name. A name two operations share is left
    out rather than told of the wrong one."""
    out = {op.name: " -- elementwise, inlined into its readers" for op in plan.inline}
    for a in plan.anchors:
        why = _WHY["tile" if a.kind == "tile" else "stream" if _stream(a) else "rows"]
        out[a.stage_op.name] = f" -- {why}"
        for m in a.members:
            out[m.name] = f" -- computed per chunk of {a.stage_op.name}'s rows, while they are in cache"
    names = [i.op.name for i in plan.graph.computed()]
    return {k: v for k, v in out.items() if names.count(k) == 1}


def _stream(a: Anchor) -> bool:
    return len(a.op.axis) == 1 and not a.op.reduce_axis and not a.members


def _placement(st) -> str:
    kind = st.attach_type
    if kind == "inline":
        return "inlined"
    if kind == "scope":
        where = f"inside {st.attach_stage.name}'s loop {st.attach_ivar.var.name}"
    else:
        where = "its own loop nest"
    return where + ("" if st.scope in ("", "global") else f", in {st.scope} memory")


def _loops(st, ranges: dict[E.IterVar, E.Range]) -> str:
    """The loops that run other than one after the other, with their trip counts."""
    if st.attach_type == "inline":
        return ""
    parts = []
    for iv in st.leaf_iter_vars:
        attr = st.iter_var_attrs.get(iv)
        kind = getattr(attr, "kind", None)
        if kind in _SHOWN:
            parts.append(f"{kind} {iv.var.name} ({_trips(ranges.get(iv))})")
    return "; " + ", ".join(parts) if parts else "; every loop serial"


def _trips(r: E.Range | None) -> str:
    if r is None:
        return "?"
    ext = r.extent
    return f"{ext.value} iterations" if isinstance(ext, E.IntImm) else f"{ext} iterations"


def report(result: AutoResult) -> str:
    """The schedule as Python (what was done), then the summary (what it amounts to, and why)."""
    s: Schedule = result.schedule
    return s.python() + "\n# " + "\n# ".join(summary(result)) + "\n"
