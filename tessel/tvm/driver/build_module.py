"""``tvm.driver.build_module``: ``build``, ``lower`` and ``schedule_to_module``, tessel's.

``schedule_to_module(s, args, name)`` is the module of the schedule's lowered function (TVM's
step before its lowering passes; tessel's ``tvm.lower`` gives the same module, with the passes
run, which is what a TE test inspects)."""

from __future__ import annotations

from .._driver import build, lower


def schedule_to_module(sch, args=None, name: str = "main", binds=None):
    """The schedule as a module of one function, ``name``."""
    return lower(sch, args, name=name, binds=binds)


__all__ = ["build", "lower", "schedule_to_module"]
