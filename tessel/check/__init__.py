"""Legality of a schedule, judged after what is derived from it (InferBound, the polyhedral model).

``violations(s)`` is every broken rule, each with its explanation and a fix that was replayed
and seen to work; ``verify(s)`` raises the first. The schedule asks the same checks while it is
written, through the interface it owns (``schedule.checking.Checker``), which the package's
face wires to :data:`CHECKS`. ``legalize_fusion`` and ``wavefront`` compute commands from the
exact dependences (``proposals.py``).
"""

from __future__ import annotations

from .proposals import Proposal, legalize_fusion, wavefront
from .rules import Checks, find_violations, verify

#: the checker every schedule asks (wired by ``tessel/__init__.py``)
CHECKS = Checks()


def violations(sch, propose: bool = True) -> list:
    """Every broken rule of ``sch``, each with its explanation and proposed fix (empty: legal)."""
    return find_violations(sch, propose)


__all__ = ["CHECKS", "Checks", "Proposal", "legalize_fusion", "violations", "verify", "wavefront"]
