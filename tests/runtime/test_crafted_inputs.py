"""Issue 30, item 4: crafted tuning logs and library metadata end in a TesselError that names the
file, never a raw RecursionError, OverflowError, AttributeError, IndexError, TypeError or KeyError."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel import te
from tessel.errors import BuildError, TesselWarning
from tessel.runtime import export, load_module
from tessel.tune.records import Record, apply_history_best
from tessel.tune.space import ConfigEntity

_GOOD = Record("w", "t", ConfigEntity.from_json_dict({"index": 3, "entity": []}), [1.0], time=1.0).to_json()
_BAD_LINES = [
    "[" * 100_000 + "]" * 100_000,  # RecursionError
    _GOOD.replace('"costs":[1.0]', '"costs":[1' + "0" * 400 + "]"),  # OverflowError in float()
    _GOOD.replace('"index":3', '"index":1e999'),  # OverflowError in int()
    _GOOD.replace('"time":1.0', '"time":[1]'),
    _GOOD.replace('"costs":[1.0]', '"costs":{"a":1}'),
    _GOOD.replace('"entity":[]', '"entity":[["x","sp",7]]'),
    _GOOD.replace('"entity":[]', '"entity":[1]'),
    _GOOD.replace('"config":{', '"config":["x",{').replace(',"costs"', '],"costs"'),
    _GOOD.replace('"workload":"w"', '"workload":["w"]'),
    "\x00\x00",
]


def test_bad_tuning_log_lines_are_skipped_with_a_warning_naming_the_file(tmp_path):
    log = tmp_path / "tune.log"
    log.write_text("\n".join([*_BAD_LINES, _GOOD, *_BAD_LINES]) + "\n")
    with pytest.warns(TesselWarning, match=rf"tuning log .*tune\.log.*skipped {2 * len(_BAD_LINES)} line"):
        ctx = apply_history_best(str(log))
    assert [r.config.index for r in ctx.records] == [3]
    assert ctx.query("w", "t").index == 3
    deep_workload = Record("[" * 100 + "]" * 100, "t", ctx.records[0].config, [1.0]).to_json()
    log.write_text(deep_workload + "\n")
    assert apply_history_best(str(log)).query_template("w", []) is None


def _library(tmp_path, monkeypatch, change) -> str:
    A = te.placeholder((13,), name="A")
    B = te.compute((13,), lambda i: A[i] * 3.0, name="B")
    f = tessel.build(te.create_schedule(B.op), [A, B])
    real = export._contract

    def crafted(kernel):
        meta = real(kernel)
        return change(meta)

    monkeypatch.setattr(export, "_contract", crafted)
    path = tmp_path / f"k{len(list(tmp_path.iterdir()))}.so"
    f.export_library(str(path))
    return str(path)


def _without(key):
    return lambda m: {k: v for k, v in m.items() if k != key}


def _set(key, value):
    return lambda m: {**m, key: value}


@pytest.mark.parametrize("change", [
    _without("outputs"), _without("symbol"), _set("outputs", [99]), _set("outputs", ["0"]), _set("params", [1, 2]),
    _set("params", [{"name": 1}]), _set("params", []), _set("parallel", "yes"), _set("name", None),
    _set("ir", "[" * 100_000 + "]" * 100_000), _set("ir", '{"format":"tessel-ir","version":1,"root":1,"nodes":[]}'),
    _set("scalar_positions", [0, 1, 2]), lambda m: [m], _set("symbol", "no_such_symbol"),
])
def test_crafted_library_metadata_is_a_build_error_naming_the_file(tmp_path, monkeypatch, change):
    path = _library(tmp_path, monkeypatch, change)
    with pytest.raises(BuildError, match=r"load_module\(.*k0\.so"):
        load_module(path)


def test_an_untouched_library_still_loads_and_computes(tmp_path, monkeypatch):
    f = load_module(_library(tmp_path, monkeypatch, lambda m: json.loads(json.dumps(m))))
    a = rand(13, seed=4)
    b = np.full(13, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 3, rtol=1e-6)
