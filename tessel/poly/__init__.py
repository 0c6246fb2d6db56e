"""The polyhedral view of a schedule (seed 004), the one adapter over islpy.

``model(s)`` builds it (statements, parametric domains, access relations, the 2d+1 schedule
into one time space) and shows it as text. ``plan(ctx)`` (``exact.py``) is the exact region
every stage computes, which lowering uses by default (``regions(s).report()`` says which stages
it changes and why others keep InferBound's box); ``astgen`` reads isl's AST back as
tessel's loop IR.
"""

from __future__ import annotations

from .exact import ExactPlan, plan, regions
from .model import Access, Loop, Model, Statement, build
from .space import Converter, Namer, NotAffine


def model(sch) -> Model:
    """The polyhedral model of ``sch`` as it would be lowered now; ``str()`` of it reads."""
    return build(sch)


__all__ = ["Access", "Converter", "ExactPlan", "Loop", "Model", "Namer", "NotAffine", "Statement", "build", "model", "plan",
           "regions"]

