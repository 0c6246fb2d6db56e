"""What a schedule asks of the checking layer after it, as an interface the schedule owns.

Legality of a schedule needs what is derived from it: InferBound's extents (``bound``) and the
exact dependences of the polyhedral model (``poly``). Those layers come after ``schedule`` in
the data flow, so the schedule cannot import them. Yet a schedule must be judged while it is
being written, too: a command is refused where it breaks a dependence (so the error points at
the line that broke it), ``compute_at`` by position lowers its position until the result is
legal, a fix is offered only once a copy of the schedule with the fix applied is legal, and
``s.verify()``, ``s.violations()`` and ``s.dependences()`` are spelled on the schedule.

So the schedule names what it needs (:class:`Checker`) and the checking layer
(:mod:`tessel.check`) provides it. The package's face (``tessel/__init__.py``) wires the one to
the other when tessel is imported, which is the only place that knows both; nothing else calls
:func:`wire`. The tree rules, which need nothing but the schedule, stay here (``legality.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InternalError

if TYPE_CHECKING:
    from ..ir import expr as E
    from .legality import Violation
    from .schedule import Schedule
    from .stage import Stage


class Checker(Protocol):
    """The checks and analyses a schedule asks for while it is written."""

    def violations(self, sch: Schedule, propose: bool = True) -> list[Violation]:
        """Every broken rule of ``sch`` as it would be built now (fixes proposed if asked)."""

    def after_command(self, sch: Schedule, stage: Stage, command: Any) -> None:
        """Raise a ScheduleError if ``command``, just applied to ``stage``, broke a dependence
        it answers for (the command is then undone by its caller)."""

    def carried(self, sch: Schedule, stage: Stage, iv: E.IterVar) -> str:
        """Words on the dependence loop ``iv`` of ``stage`` carries, or "" (none, or unknown)."""

    def dependences(self, sch: Schedule) -> list:
        """The dependences between statement instances of ``sch`` as it would be lowered now."""


_WIRED: list[Checker] = []


def wire(checker: Checker) -> None:
    """Make ``checker`` the one every schedule asks (the package's face does, once)."""
    _WIRED[:] = [checker]


def checker() -> Checker:
    if not _WIRED:
        raise InternalError("no checking layer is wired to tessel.schedule: import tessel (whose face wires "
                            "tessel.check to it) rather than one of its packages alone")
    return _WIRED[0]


__all__ = ["Checker", "checker", "wire"]
