"""The step explorer: one self-contained HTML file that replays how a schedule was built.

For every recorded step (see :mod:`tessel.schedule.history`) it shows the call and the line
that made it, the three views, InferBound's ranges and the lowered IR of the schedule as it
stood right after that call; a step that made the schedule illegal is marked with the
explanation and the proposed fix. Everything is computed here, in Python, from the snapshots;
the page only shows it (no network, no external script or font), so a report can be mailed,
archived or opened years later.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ScheduleError, TesselError, ViewError
from ..ir.names import html_text
from ..schedule.history import Record
from ..schedule.kinds import INLINE
from ..schedule.schedule import Schedule
from ..te.tensor import Tensor
from .page import PAGE
from .views import bounds_of, dataflow_graph, itervar_graph, schedule_tree

VIEWS = (("tree", "schedule tree", schedule_tree), ("dataflow", "dataflow graph", dataflow_graph),
         ("itervar", "IterVar-relation DAG", itervar_graph))


def explorer(s_or_history, args=None, path: str | Path | None = None, engine: str = "auto",
             title: str = "tessel schedule explorer") -> str:
    """The explorer page as HTML text (also written to ``path`` when given).

    ``s_or_history`` is a schedule, its ``history`` (a list of steps), or a list of schedules
    (the page then has a schedule selector). ``args`` are the tensors to lower, as for
    ``tessel.lower``: a list, or a dict from schedule to list when there are several; by
    default a schedule is lowered with its inputs then its outputs.
    """
    groups = _groups(s_or_history)
    renderer = _Renderer(engine)
    data = {"title": title, "views": [[key, name] for key, name, _ in VIEWS], "svgs": renderer.svgs,
            "schedules": []}
    for k, (label, steps, sch) in enumerate(groups):
        sch_args = args.get(sch) if isinstance(args, dict) else args
        data["schedules"].append({"label": label or f"schedule {k + 1}",
                                  "steps": _mark_transitions([renderer.step(r, sch_args) for r in steps])})
    text = PAGE.replace("__TITLE__", html_text(title)).replace("__DATA__", embedded_json(data))
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def embedded_json(data: Any) -> str:
    """``data`` as JSON that can sit inside a ``<script>`` element whatever strings it holds.

    Inside a script the HTML parser still looks for ``</script``, and ``<!--`` followed by
    ``<script`` makes it skip the real end tag (the page goes blank), so escaping ``</`` is
    not enough: no ``<``, ``>`` or ``&`` is left at all (JSON's ``\\u003c`` means the same to
    ``JSON.parse``), and ASCII output escapes U+2028/U+2029 and lone surrogates."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _groups(obj) -> list[tuple[str, list[Record], Schedule | None]]:
    if isinstance(obj, Schedule):
        return [(_label(obj), list(obj.history), obj)]
    if isinstance(obj, Sequence) and obj and all(isinstance(r, Record) for r in obj):
        return [("", list(obj), None)]
    if isinstance(obj, Sequence) and obj and all(isinstance(s, Schedule) for s in obj):
        return [(f"{k + 1}. {_label(s)}", list(s.history), s) for k, s in enumerate(obj)]
    raise ViewError("explorer needs a schedule, a schedule's history (s.history) or a list of schedules; "
                    f"got {type(obj).__name__}{' (empty)' if isinstance(obj, Sequence) and not obj else ''}")


def _label(s: Schedule) -> str:
    first = s.history[0] if s.history else None
    where = f" ({Path(first.filename).name}:{first.lineno})" if first and first.filename else ""
    return f"schedule of {', '.join(op.name for op in s.outputs)}{where}"


class _Renderer:
    """Turns each step's snapshot into page data; identical pictures are stored once."""

    def __init__(self, engine: str):
        self.engine = engine
        self.svgs: list[str] = []
        self._svg_index: dict[str, int] = {}

    def _svg(self, view) -> int:
        dot = view.to_dot()
        if dot not in self._svg_index:
            self._svg_index[dot] = len(self.svgs)
            self.svgs.append(view.to_svg(self.engine))
        return self._svg_index[dot]

    def step(self, rec: Record, args) -> dict[str, Any]:
        out: dict[str, Any] = {"index": rec.index, "call": rec.call, "code": rec.code, "where": rec.where,
                               "result": rec.result, "call_error": _error_data(rec.error),
                               "state": "unknown", "problem": None, "views": {}, "bounds": [],
                               "bounds_note": None, "ir": {}}
        snap = rec.snapshot
        if snap is None:
            out["problem"] = {"type": "no snapshot", "message": rec.snapshot_error or "snapshots were turned off",
                              "explanation": None, "fix": None}
            return out
        # the numbers the pictures' hooks use (tsl-in-K), with the names the stage panel shows
        out["stages"] = [[k, st.name] for k, st in enumerate(snap.stages) if not st.is_placeholder]
        for key, _, fn in VIEWS:
            try:
                out["views"][key] = self._svg(fn(snap))
            except TesselError as err:
                out["views"][key] = self._error_svg(key, err)
        if rec.primitive in _POSITION_STEPS and len(snap.position_log) > _log_length(rec):
            out["positions"] = snap.position_log[-1].to_text()  # seed 003: what moved, where
        out["bounds"], out["bounds_note"] = _bounds_rows(snap)
        out["state"], out["problem"], out["ir"] = _check_and_lower(snap, _snapshot_args(rec, snap, args))
        out["deps"], out["deps_note"] = [], "not analysed: the schedule does not lower"
        if out["state"] == "ok":
            out["deps"], out["deps_note"], model_text = _dependence_rows(snap)
            if model_text:
                out["ir"]["poly"] = model_text
        return out

    def _error_svg(self, key: str, err: Exception) -> int:
        self.svgs.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="600" height="30"><text x="8" y="20" '
                         f'font-family="monospace" font-size="12">{html_text(key)} view failed: '
                         f"{html_text(str(err), 400)}</text></svg>")
        return len(self.svgs) - 1


_POSITION_STEPS = ("compute_at", "propagate")


def _log_length(rec: Record) -> int:
    """How many position reports the schedule had before this step (a TE compute_at adds none)."""
    prev = rec._prev.snapshot if rec._prev is not None else None
    return len(prev.position_log) if prev is not None else 0


def _snapshot_args(rec: Record, snap: Schedule, args) -> list[Tensor]:
    if args is None:
        inputs = [t for st in snap.stages if st.is_placeholder for t in st.op.outputs]
        return inputs + [t for op in snap.outputs for t in op.outputs]
    found = [rec.in_snapshot(t) for t in args if isinstance(t, Tensor)]
    return [t for t in found if t is not None]  # a tensor made by a later step is not there yet


def _check_and_lower(snap: Schedule, args: list[Tensor]) -> tuple[str, dict | None, dict[str, str]]:
    """The state after a step: ``ok``, ``illegal`` (a ScheduleError) or ``error``, and its IR."""
    from ..driver import lower_steps

    verify = getattr(snap, "verify", None)
    try:
        if callable(verify):
            verify()
        func, steps = lower_steps(snap, args)
    except ScheduleError as err:
        return "illegal", _error_data(err), {}
    except TesselError as err:
        return "error", _error_data(err), {}
    except Exception as err:  # a tessel bug must not take the whole report down with it
        data = _error_data(err)
        data["type"] = f"internal error ({type(err).__name__})"
        return "error", data, {}
    ir = {"lowered": str(func)}
    first = next((st for st in steps if st.name == "schedule_ops"), None)
    if first is not None:
        ir["schedule_ops"] = str(first.ir)
    return "ok", None, ir


def _error_data(err: BaseException | None) -> dict | None:
    if err is None:
        return None
    message = str(err)
    explanation = getattr(err, "explanation", None)
    return {"type": type(err).__name__, "message": message,
            "explanation": explanation if explanation and explanation != message else None,
            "fix": getattr(err, "fix", None)}


def _bounds_rows(snap: Schedule) -> tuple[list[list[str]], str | None]:
    rmap, why = bounds_of(snap)
    rows = []
    for st in snap.stages:
        if st.is_placeholder or st.attach_type == INLINE:
            continue
        roots = set(map(id, st.op.root_iter_vars))
        leaves = {id(iv): k for k, iv in enumerate(st.leaf_iter_vars)}
        for iv in st.all_iter_vars:
            kind = ["root"] if id(iv) in roots else []
            if id(iv) in leaves:
                kind.append(f"loop {leaves[id(iv)]}")
            if iv.is_reduce:
                kind.append("reduce")
            r = rmap.get(iv)
            rows.append([st.name, iv.name, ", ".join(kind) or "derived",
                         str(r.min) if r is not None else "?", str(r.extent) if r is not None else "?"])
    return rows, why


def _dependence_rows(snap: Schedule) -> tuple[list[list[str]], str, str]:
    """The dependences of the schedule after a step (seed 004), one row each with an example
    and the loops that carry it; a note on what the model leaves out; the model as text."""
    from ..poly.analysis import analysis
    from ..poly.deps import carried

    try:
        found = analysis(snap)
        model, deps = found.model, found.dependences
    except TesselError as err:
        return [], f"not analysed: {err}", ""
    rows = []
    for d in deps:
        loops = [lp for lp in d.common_loops() if carried(model, [d], lp) is not None]
        w = d.witness()
        rows.append([d.kind, d.source.label(), d.sink.label(), d.tensor_name, str(w) if w else "",
                     ", ".join(f"{lp.stage.name}.{lp.name}" for lp in loops) or "none (loop-independent)"])
    notes = [f"{name}: {why}" for name, why in model.unmodelled.items()]
    empty = model.empty_statements()
    if empty:
        notes.append("never run (empty domain): " + ", ".join(x.label() for x in empty))
    unread = model.unread_stages()
    if unread:
        notes.append("computed but read by no stage: " + ", ".join(unread))
    return rows, "; ".join(notes), model.text()


def _mark_transitions(steps: list[dict]) -> list[dict]:
    """Name what each step did to legality: made it illegal, kept it so, or fixed it."""
    before = "ok"
    for st in steps:
        now = st["state"]
        st["transition"] = ("made illegal" if now == "illegal" and before != "illegal" else
                            "still illegal" if now == "illegal" else
                            "made legal" if before == "illegal" and now == "ok" else "")
        if now != "unknown":
            before = now
    return steps
