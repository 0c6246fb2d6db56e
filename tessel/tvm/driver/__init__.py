"""``tvm.driver``: where TVM keeps ``build`` and ``lower`` (``tvm.driver.build_module``)."""

from __future__ import annotations

from .build_module import build, lower, schedule_to_module

__all__ = ["build", "build_module", "lower", "schedule_to_module"]
