"""Tuning records: one JSON line per measured config, keyed by workload and target.

A line is ``{"workload": key, "target": text, "config": {...}, "costs": [s, ...],
"error": text | null, "kind": text | null, "time": unix, "version": 1}``. Lines are appended
whole with one ``write`` on a file opened for appending, so concurrent tuners and an
interrupted one leave only whole lines (a torn last line, from a crash mid-write, is skipped
on reading). The log is what resumes a tuning job (configs already in it are not measured
again) and what :func:`apply_history_best` builds templates from.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import TesselWarning, TuneError
from ..ir.names import shown
from ..runtime.files import loads_json
from .space import ConfigEntity
from .task import DISPATCH

VERSION = 1


@dataclass
class Record:
    workload: str
    target: str
    config: ConfigEntity
    costs: list[float] = field(default_factory=list)
    error: str | None = None
    kind: str | None = None
    time: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)

    @property
    def cost(self) -> float:
        return sum(self.costs) / len(self.costs) if self.ok else float("inf")

    def to_json(self) -> str:
        return json.dumps({"workload": self.workload, "target": self.target, "config": self.config.to_json_dict(),
                           "costs": self.costs, "error": self.error, "kind": self.kind, "time": self.time,
                           "version": VERSION}, separators=(",", ":"))

    @staticmethod
    def from_json(line: str) -> Record:
        """The record on one log line; TuneError for anything else (a torn line, damage, a line
        crafted to break the reader: too deep, numbers out of range, fields of the wrong type)."""
        try:
            data = loads_json(line, "a tuning log line")
            if not isinstance(data, dict) or data.get("version") != VERSION:
                raise ValueError(f"not a tessel tuning record of version {VERSION}")
            workload, target, costs = data["workload"], data["target"], data.get("costs") or []
            error, kind, when = data.get("error"), data.get("kind"), data.get("time", 0.0)
            if not (isinstance(workload, str) and isinstance(target, str) and isinstance(costs, list)
                    and all(_number(c) for c in costs) and _number(when)
                    and all(x is None or isinstance(x, str) for x in (error, kind))):
                raise ValueError("a field has the wrong type")
            return Record(workload, target, ConfigEntity.from_json_dict(data["config"]),
                          [float(c) for c in costs], error, kind, float(when))
        except (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError) as e:
            raise TuneError(f"not a tessel tuning record: {shown(line[:80])} ({shown(str(e)[:200])})") from None


def _number(x: object) -> bool:
    """A cost or a time as the log holds it (an int whose float would overflow is not one)."""
    return isinstance(x, float) or (isinstance(x, int) and not isinstance(x, bool) and abs(x) < 2**1000)


def from_result(task, res) -> Record:
    """The record of one :class:`~tessel.tune.measure.MeasureResult` of ``task``."""
    return Record(task.workload, task.target_key, res.config, list(res.costs), res.error, res.error_kind,
                  res.timestamp)


def check_log(path: object) -> str:
    """The log's path, checked before any measurement: a log that cannot be written would
    otherwise fail after the first batch, its measurements lost."""
    if not isinstance(path, str | os.PathLike):
        raise TuneError(f"tuning log: give a file path (str or os.PathLike), got {type(path).__name__}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        raise TuneError("tuning log: give the file path as a str, not bytes")
    if os.path.isdir(text):
        raise TuneError(f"tuning log {shown(text)} is a directory; give a file in it (e.g. {shown(text)}/tune.log)")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise TuneError(f"tuning log {shown(text)}: its directory {shown(parent)} does not exist; create it first")
    return text


def append(path: str | os.PathLike, records: list[Record]) -> None:
    """Add whole lines to the log (one write per call: a reader never sees half a record)."""
    if not records:
        return
    text = "".join(r.to_json() + "\n" for r in records).encode()
    try:
        fd = os.open(check_log(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
        raise TuneError(f"tuning log {shown(os.fspath(path))} cannot be written ({e.strerror}); give a path "
                        "this process may write") from None
    try:
        os.write(fd, text)
        os.fsync(fd)
    finally:
        os.close(fd)


def load(path: str | os.PathLike) -> Iterator[Record]:
    """The records of a log, in order; lines that are not whole records are skipped (a torn
    last line); a missing log has none."""
    try:
        f = open(check_log(path), encoding="utf-8")
    except FileNotFoundError:
        return
    except OSError as e:
        raise TuneError(f"tuning log {shown(os.fspath(path))} cannot be read ({e.strerror})") from None
    skipped: list[int] = []
    with f:
        try:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield Record.from_json(line)
                except TuneError:
                    skipped.append(number)
        except UnicodeDecodeError:
            skipped.append(-1)  # not text from here on
    if skipped:
        where = ", ".join("the rest (not UTF-8)" if n < 0 else str(n) for n in skipped[:5])
        warnings.warn(f"tuning log {shown(os.fspath(path))}: skipped {len(skipped)} line(s) that are not whole "
                      f"records (line {where}{', ...' if len(skipped) > 5 else ''}); a line torn by a crash, "
                      "damage or another program's text", TesselWarning, stacklevel=2)


load_from_file = load  # AutoTVM's spelling


def best(records, workload: str, target: str | None = None) -> Record | None:
    """The fastest successful record of ``workload`` (on ``target``, when given)."""
    found = [r for r in records if r.ok and r.workload == workload and (target is None or r.target == target)]
    return min(found, key=lambda r: r.cost) if found else None


class ApplyHistoryBest:
    """While in force (``with apply_history_best(log):``), a template built outside tuning gets
    the best recorded config of its workload on the current target."""

    def __init__(self, records):
        if isinstance(records, str | os.PathLike):
            records = list(load(records))
        self.records = list(records)
        self._token = None

    def query(self, workload: str, target: str | None = None) -> ConfigEntity | None:
        rec = best(self.records, workload, target)
        return rec.config if rec is not None else None

    def query_template(self, name: str, args) -> ConfigEntity | None:
        """The best config of template ``name`` on these arguments (whatever the compute digest
        and target: a template called by name is taken to be that template)."""
        found = []
        for r in self.records:
            try:
                key = loads_json(r.workload, "a tuning record's workload")
            except ValueError:
                continue
            if r.ok and isinstance(key, list) and len(key) >= 2 and key[0] == name and key[1] == args:
                found.append(r)
        return min(found, key=lambda r: r.cost).config if found else None

    def __enter__(self) -> ApplyHistoryBest:
        self._token = DISPATCH.set(self)
        return self

    def __exit__(self, *exc) -> None:
        DISPATCH.reset(self._token)


def apply_history_best(log) -> ApplyHistoryBest:
    """A context under which templates build with the best config recorded in ``log``."""
    return ApplyHistoryBest(log)

