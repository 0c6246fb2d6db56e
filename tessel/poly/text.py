"""The polyhedral model as text a person reads: per statement its domain, schedule, loops and
accesses in isl's notation (over the model's safe names), user names shown beside them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.names import shown
from ..schedule.commands import describe

if TYPE_CHECKING:
    from .model import Model


def model_text(m: Model) -> str:
    outs = ", ".join(shown(op.name) for op in m.sch.outputs)
    lines = [f"polyhedral model (outputs: {outs}; {len(m.statements)} statement(s), "
             f"time space of {m.time_dims} dimension(s))"]
    if m.params:
        names = ", ".join(f"{shown(v.name)} as {n}" for v, n in m.params.items())
        lines.append(f"sizes: {names}")
    lines.append(f"context: {m.context}")
    for s in m.statements:
        lines.append(f"statement {s.name}: {s.label()}")
        lines.append(f"  domain:   {s.domain}")
        lines.append(f"  schedule: {s.schedule}")
        if s.loops:
            lp = ", ".join(f"{shown(x.name)}{'' if x.kind == 'serial' else ' ' + x.kind} ({_dims(x)})" for x in s.loops)
            lines.append(f"  loops:    {lp}")
        if s.role != "update" and describe(s.stage):  # Tiramisu's commands, composed into the schedule
            lines.append(f"  commands: {', '.join(shown(c) for c in describe(s.stage))}")
        for a in s.accesses:
            how = "" if a.exact else f"  [approximate: {a.reason}]"
            lines.append(f"  {'writes' if a.write else 'reads '} {a.text}: {a.relation}{how}")
    for name, why in m.unmodelled.items():
        lines.append(f"not modelled: {shown(name)}: {why}")
    for s in m.empty_statements():
        lines.append(f"empty: {s.label()} has no instance for any size the context allows")
    for name in m.unread_stages():
        lines.append(f"unread: {shown(name)} is computed but no other stage reads it")
    return "\n".join(lines)


def _dims(lp) -> str:
    if lp.width == 0:
        return "runs once: no dimension"
    return f"t{lp.pos}" + ("" if lp.width == 1 else f"..t{lp.pos + lp.width - 1}")


__all__ = ["model_text"]
