"""Refining the rule-based schedule with the tuner's search (``tessel.tune``).

The plan's knobs become a config space (one ``cfg.define_knob`` each, its default listed
first, so the space's first point is the rule-based schedule); the sketch is a template
``sketch(cfg)`` that writes the plan with the config's values. The tuner then does what it
does for any template: candidates built and run in separate processes with timeouts, checked
against the unscheduled computation, a cost model guiding the choice of the next batch,
records keyed by workload and target, resumable from a log. The first batch always holds the
default, and a winner other than the default must beat it again head to head (measured in
turns, :data:`CONFIRM_ROUNDS` each, after the search): one noisy measurement on a shared
machine (a burst of load during the default's run) must not trade the rules' schedule for a
slower one. The rules' schedule is the floor.
"""

from __future__ import annotations

import numpy as np

from ..tune.api import tune
from ..tune.search import ModelTuner
from ..tune.task import Task
from .plan import Plan

BUILD_TIMEOUT = 60.0  # seconds one candidate may take to build
CONFIRM_ROUNDS = 3  # head-to-head measurements of the search's winner and the rules' schedule, in turns


class _FromDefault(ModelTuner):
    """The model-guided tuner, with the rule-based default (point 0) in its first batch."""

    confirmed: tuple[list[float], list[float]] | None = None  # the head-to-head's costs: rules', winner's

    def next_batch(self, n: int) -> list[int]:
        rest = super().next_batch(n)
        if 0 in self.visited or not self.space.is_index_valid(0):
            return rest
        return [0, *[i for i in rest if i != 0][: n - 1]]

    def _loop(self, measurer, *args, **kwargs) -> None:
        super()._loop(measurer, *args, **kwargs)
        self.confirm(measurer)

    def confirm(self, measurer) -> None:
        """Keep the search's winner only if it beats the rules' schedule again, both measured in
        turns (the median of :data:`CONFIRM_ROUNDS` each); else the rules' schedule. Skipped when
        the time limit has passed before it (the best measured so far stands) or the default
        failed; a head-to-head the limit cuts short keeps the rules' schedule, the floor."""
        self.confirmed = None
        default = next((r for r in self.results if r.config.index == 0 and r.ok), None)
        best = self.best
        if best is None or default is None or best.config.index == 0 or self._out_of_time():
            return
        res = measurer.measure([default.config, best.config] * CONFIRM_ROUNDS, self.known_features, self.deadline)
        rules = [r.cost for r in res[0::2] if r.ok]
        won = [r.cost for r in res[1::2] if r.ok]
        self.confirmed = (rules, won)
        if len(rules) < CONFIRM_ROUNDS or len(won) < CONFIRM_ROUNDS or np.median(won) >= np.median(rules):
            self.best, self.best_cost = default, default.cost


def task(plan: Plan, make, sizes=None) -> Task:
    """The plan as a tuning task: ``make(knobs) -> (schedule, tensors)`` writes one point;
    ``sizes``: the values its symbolic sizes take while measured (see tune.Task)."""

    def sketch(cfg):
        for k in plan.knobs:  # the default first: the first point of the space is the rule's schedule
            cfg.define_knob(k.name, [k.default, *[c for c in k.candidates if c != k.default]])
        # a knob whose value does what its default does there keeps its default (Knob.matters)
        cfg.multi_filter(lambda c: plan.distinct({k.name: c[k.name].val for k in plan.knobs}))
        return make({k.name: cfg[k.name].val for k in plan.knobs})

    sketch.__qualname__ = "auto_schedule"
    return Task(sketch, (), plan.target, sizes=sizes)


def refine(plan: Plan, make, trials: int, log: str | None = None, progress=False,
           time_limit: float | None = None, sizes=None) -> tuple[dict, object]:
    """The best knob values found in ``trials`` measurements (the default among them) or in
    ``time_limit`` seconds, whichever ends first, and the tuner's result (records, costs)."""
    t = task(plan, make, sizes)
    # a candidate with tail tiles can take seconds to lower on a loaded machine: a generous limit
    search = _FromDefault(t)
    result = tune(t, trials=trials, tuner=search, log=log, progress=progress, build_timeout=BUILD_TIMEOUT,
                  time_limit=time_limit)
    # the rules' schedule is the floor: a time limit that cut it off leaves nothing to compare with
    if result.config is None or not any(r.config.index == 0 for r in search.results):
        return plan.defaults(), result
    return {k.name: result.config[k.name].val for k in plan.knobs}, result
