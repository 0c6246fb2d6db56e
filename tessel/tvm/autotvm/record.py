"""``autotvm.record``: reading tessel's tuning records as AutoTVM's (input, result) pairs."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

from ...tune import records as R
from ...tune.measure import MeasureResult
from .._names import missing_names


def load_from_file(filename) -> Iterator[tuple[SimpleNamespace, MeasureResult]]:
    """Each record as ``(inp, res)``: ``inp.config``, ``inp.workload``, ``inp.target``;
    ``res.costs``, ``res.error_no``, ``res.timestamp``."""
    for rec in R.load(filename):
        inp = SimpleNamespace(config=rec.config, workload=rec.workload, target=rec.target, task=None)
        yield inp, MeasureResult(rec.config, rec.costs, rec.error, rec.kind, timestamp=rec.time)


def pick_best(in_file, out_file) -> None:
    """Write to ``out_file`` the best record of each workload and target of ``in_file``."""
    best: dict[tuple[str, str], R.Record] = {}
    for rec in R.load(in_file):
        key = (rec.workload, rec.target)
        if rec.ok and (key not in best or rec.cost < best[key].cost):
            best[key] = rec
    R.append(out_file, list(best.values()))


__all__ = ["load_from_file", "pick_best"]

# a name AutoTVM has and tessel does not says so (NotOfferedError), with what to use
__getattr__ = missing_names(__name__)
