"""The peers' automatic schedulers as contenders: Halide's three autoschedulers and TVM's
MetaSchedule, each scheduling the same definition as that peer's hand schedule.

Each autoscheduler is a contender of its own in the interleaved rounds (``halide:Adams2019``,
...), checked against NumPy like every other; afterwards :func:`summarize` makes the
"Halide auto" figure the best of the three that ran and names the winner, keeping each one's
time in the JSON. A plugin that is missing, fails to load or errors on a kernel gets a note
and the others go on. MetaSchedule runs at ``trials`` measured candidates (0: off); without
the packages it needs, its column says which are missing. The seconds each spent choosing
its schedule (autoscheduler or search, then the build) land in ``row.tune_s``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .peer_base import PeerRun, PeerUnavailable
from .peers_halide import AUTOSCHEDULERS
from .peers_tvm import metaschedule_missing

HALIDE_AUTO = "halide_auto"  # the best of the autoschedulers, after the rounds
METASCHEDULE = "metaschedule"


def halide_names() -> list[str]:
    """The per-autoscheduler contenders' names, ``halide:<autoscheduler>``."""
    return [f"halide:{name}" for name in AUTOSCHEDULERS]


def _try(name: str, build: Callable[[], PeerRun], row, label: str) -> tuple | None:
    """Build one automatic contender; its failure is a note on ``row``, not a crash."""
    try:
        pr = build()
    except PeerUnavailable as e:
        row.notes[name] = str(e)
        return None
    except Exception as e:  # an autoscheduler erring on a kernel is a result
        row.notes[name] = f"failed: {type(e).__name__}"
        print(f"  {name} failed on {label}: {str(e).splitlines()[0][:200] if str(e) else ''}", file=sys.stderr)
        return None
    row.tune_s[name] = (pr.tune_s or 0.0) + pr.build_s
    return pr.run, pr.result


def contenders(case, inputs: list, row, peers_on: dict[str, bool], ms_trials: int) -> dict:
    """The automatic peers' runners for ``case`` (name -> (run, result)); why the others have
    no number goes in ``row.notes``."""
    label = f"{case.kernel} {case.size}"
    runners: dict = {}
    halide = case.peers.get("halide")
    for name, plugin in zip(halide_names(), AUTOSCHEDULERS):
        if not peers_on.get("halide"):
            row.notes[name] = "not installed"
        elif halide is None:
            row.notes[name] = "not run" if case.threads else "no definition"
        else:
            print(f"  Halide {plugin} ...", file=sys.stderr, flush=True)
            got = _try(name, lambda plugin=plugin: halide(*inputs, autoscheduler=plugin), row, label)
            if got:
                runners[name] = got
    tvm = case.peers.get("tvm")
    missing = metaschedule_missing()
    if not peers_on.get("tvm"):
        row.notes[METASCHEDULE] = "not installed"
    elif missing:
        row.notes[METASCHEDULE] = missing
    elif tvm is None:
        row.notes[METASCHEDULE] = "not run" if case.threads else "no definition"
    elif ms_trials <= 0:
        row.notes[METASCHEDULE] = "off"
    else:
        print(f"  MetaSchedule, {ms_trials} trials ...", file=sys.stderr, flush=True)
        got = _try(METASCHEDULE, lambda: tvm(*inputs, trials=ms_trials), row, label)
        if got:
            runners[METASCHEDULE] = got
    return runners


def summarize(row) -> None:
    """"Halide auto": the fastest autoscheduler that ran (its time, rate and tuning seconds,
    and its name in ``row.halide_auto``); where none ran, their notes joined."""
    ran = [n for n in halide_names() if row.seconds.get(n) is not None]
    if not ran:
        notes = {row.notes.get(n, "—") for n in halide_names()}
        row.notes[HALIDE_AUTO] = notes.pop() if len(notes) == 1 else \
            "; ".join(f"{n.split(':')[1]}: {row.notes.get(n, '—')}" for n in halide_names())
        return
    best = min(ran, key=lambda n: row.seconds[n])
    row.seconds[HALIDE_AUTO], row.rate[HALIDE_AUTO] = row.seconds[best], row.rate[best]
    row.tune_s[HALIDE_AUTO] = row.tune_s.get(best)
    row.halide_auto = best.split(":", 1)[1]
