"""Random schedules from the fuzzer's generator, with exact regions (the default) on: both
targets match NumPy, and a good share of the programs really take the exact path (a producer
computes fewer instances than its box), so the values checked are the exact lowering's."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from tessel import driver

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))  # test_schedule_fuzz
from test_schedule_fuzz import FUZZ, run_example


def test_random_schedules_compute_numpys_values_with_exact_regions(monkeypatch):
    changed: list[bool] = []
    real = driver.exact_plan

    def watched(ctx):
        p = real(ctx)
        changed.append(bool(p.changed))
        return p

    monkeypatch.setattr(driver, "exact_plan", watched)
    stats: dict = {}

    @seed(13013)
    @settings(FUZZ, max_examples=30)
    @given(st.data())
    def run(data):
        run_example(data.draw, stats, (2, 3))

    run()
    assert stats.get("accepted", 0) >= 15, stats
    assert sum(changed) >= 3, f"only {sum(changed)} of {len(changed)} lowerings took the exact path"
