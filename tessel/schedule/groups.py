"""Groups of stages (TVM's ``create_group``): stages scheduled as one, nested as a tree.

A group holds the stages between some inputs and outputs; each stage and each group belongs
to at most one enclosing group (its ``group``), the innermost, so groups form a tree, as in
TVM. A scan's body is a group of its own from the start (``Schedule`` makes it), which is
why a stage of the body cannot be attached to a stage outside the scan.

What a group means for placement: a stage may be attached only inside its own group, or, if
it is one of the group's roots (not yet placed inside the group), wherever the group itself
may go (inside the group's parent group, anywhere for a top-level group). That is exactly what
``group.compute_at`` does: it attaches each root member at the point given, one recorded step
each, so that a schedule with groups replays as any other. TVM keeps the group as a stage of
its own that its roots follow when lowered; tessel moves the roots themselves, so InferBound
and lowering never see a group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from .kinds import SCOPE

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


class StageGroup:
    """Stages scheduled together; ``group`` is the group it lies in (None: the top level)."""

    def __init__(self, schedule: Schedule, members: list[Stage], group: StageGroup | None = None,
                 anchor: Stage | None = None):
        self.schedule, self.members, self.group = schedule, members, group
        self.anchor = anchor  # a scan's body: the scan, the only stage outside it its roots run in

    def roots(self) -> list[Stage]:
        """The members whose place is not already inside the group."""
        return [m for m in self.members if m.attach_stage not in self.members]

    @property
    def num_child_stages(self) -> int:
        """The stages and groups whose innermost group is this one (TVM's count)."""
        return sum(1 for x in [*self.schedule.stages, *self.schedule.groups] if x.group is self)

    @property
    def attach_stage(self) -> Stage | None:
        """The stage the group is computed at: where all its roots are (None if they differ)."""
        roots = self.roots()
        at = {id(m.attach_stage) for m in roots}
        return roots[0].attach_stage if len(at) == 1 and all(m.attach_type == SCOPE for m in roots) else None

    def compute_at(self, parent, scope: E.IterVar) -> None:
        for m in self.roots():
            m.compute_at(parent, scope)

    def compute_root(self) -> None:
        for m in self.roots():
            m.compute_root()

    def compute_inline(self) -> None:
        for m in self.members:
            m.compute_inline()

    @property
    def name(self) -> str:
        return "group(" + ", ".join(m.name for m in self.members) + ")"

    def __repr__(self) -> str:
        return self.name


def _chain(g: StageGroup | None) -> list[StageGroup]:
    out = []
    while g is not None:
        out.append(g)
        g = g.group
    return out


def _common(a: StageGroup | None, b: StageGroup | None) -> StageGroup | None:
    """The innermost group holding both (TVM's LeastCommonAncestor; None: the top level)."""
    if a is None or b is None:
        return None
    up = _chain(b)
    return next((g for g in _chain(a) if g in up), None)


def check_placement(st: Stage, parent: Stage) -> None:
    """Refuse attaching ``st`` at ``parent`` outside the groups that hold it (module doc)."""
    outer = _chain(parent.group)
    g = st.group
    while g is not None and g not in outer:
        if g.anchor is not None and parent is not g.anchor:
            raise ScheduleError(
                f"stage {st.name} is part of the body of scan {g.anchor.name}, which runs it once per step inside "
                f"the scan's loop; {parent.name} lies outside that body: attach {st.name} at a stage of {g.name}")
        if st.attach_stage in g.members:
            raise ScheduleError(
                f"stage {st.name} is placed inside {g.name}, but {parent.name} lies outside it; attach "
                f"{st.name} at a stage of that group, or move the whole group (its compute_at) to {parent.name}")
        if g.anchor is not None:
            return  # back at its scan's loop
        g = g.group  # a root of ``g`` goes wherever ``g`` may go


def _members(sch: Schedule, outputs, inputs, include_inputs: bool) -> list[Stage]:
    """The stages from ``outputs`` back to ``inputs`` (exclusive unless ``include_inputs``)."""
    from ..te.tensor import Tensor

    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    stop = {id(t.op) for t in ins}
    members: list[Stage] = []
    seen: set[int] = set()
    stack = [sch[t].op for t in outs]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if id(op) in stop:
            if include_inputs:
                members.append(sch[op])
            continue
        members.append(sch[op])
        stack.extend(t.op for t in op.input_tensors() if not t.op.is_placeholder or id(t.op) in stop)
    if not members:
        raise ScheduleError("create_group: no stage lies between the inputs and the outputs given")
    members.sort(key=sch.stages.index)  # producers first, as in the schedule
    return members


def create_group(sch: Schedule, outputs, inputs, include_inputs: bool = False) -> StageGroup:
    """A group of the stages between ``inputs`` and ``outputs``, placed in the tree as TVM's:
    under the innermost group holding all of them; a group all of whose stages it takes
    becomes its child; one it takes only part of is refused (groups may nest, not overlap)."""
    members = _members(sch, outputs, inputs, include_inputs)
    parent = members[0].group
    for m in members[1:]:
        parent = _common(parent, m.group)
    taken: dict[int, int] = {}  # id of a group below ``parent`` -> how many of its children are taken
    groups = {id(g): g for m in members for g in _chain(m.group) if g is not parent and g not in _chain(parent)}
    for m in members:
        if m.group is not None and id(m.group) in groups:
            taken[id(m.group)] = taken.get(id(m.group), 0) + 1
    for g in sorted(groups.values(), key=lambda g: -len(_chain(g))):  # innermost first: a full one counts
        if taken.get(id(g), 0) != g.num_child_stages:
            raise ScheduleError(f"create_group: the stages asked for take part of {g.name} but not all of it; "
                                "a group may hold another group whole, never part of one")
        if g.group is not None and id(g.group) in groups:
            taken[id(g.group)] = taken.get(id(g.group), 0) + 1
    group = StageGroup(sch, members, parent)
    for x in [*groups.values(), *members]:  # the children of ``parent`` taken become this group's
        if x.group is parent:
            x.group = group
    sch.groups.append(group)
    return group


def scan_group(sch: Schedule, scan: Stage, body: list[Stage]) -> StageGroup:
    """The group of a scan's body stages, made with the schedule."""
    group = StageGroup(sch, body, anchor=scan)
    for st in body:
        st.group = group
    sch.groups.append(group)
    return group


def copy_groups(groups: list[StageGroup], smap: dict[int, Stage], sch: Schedule) -> list[StageGroup]:
    """The groups of a copied schedule (``Schedule.copy``), over its stages (``smap``: id of an
    old stage -> its copy), each copy's ``group`` pointing at the new groups."""
    gmap: dict[int, StageGroup] = {}
    for g in groups:  # a group is made after the groups it holds: parents come later in the list
        gmap[id(g)] = StageGroup(sch, [smap[id(m)] for m in g.members], None,
                                 smap.get(id(g.anchor)) if g.anchor is not None else None)
    for g in groups:
        gmap[id(g)].group = gmap.get(id(g.group)) if g.group is not None else None
    for st in smap.values():
        if st.group is not None:
            st.group = gmap.get(id(st.group), st.group)
    return [gmap[id(g)] for g in groups]


__all__ = ["StageGroup", "check_placement", "copy_groups", "create_group", "scan_group"]
