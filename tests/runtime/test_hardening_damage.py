"""Issue 10, item 9: no damaged cache file ever breaks a later build.

Each example damages one of the cache's files -- a kernel's sidecar, its object, its source
copy, the remembered plan in ``lowered/``, or ``compilers.json`` -- by replacing one JSON value
(anywhere in the tree), deleting a key, truncating it or filling it with arbitrary bytes; then a
new build of the same kernel (with the process's memory of the cache forgotten) must compute the
right values, and the damaged entry is written whole again.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tessel
from tessel import te
from tessel.runtime import cache, compiler

N = 11


def _build():
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] * 1.5 - 2.0, name="B")
    return tessel.build(te.create_schedule(B.op), [A, B], name="damaged")


def _check(f) -> None:
    a = np.random.default_rng(5).uniform(-3, 3, N).astype("float32")
    b = np.full(N, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 1.5 - 2.0, rtol=1e-6)


def _forget() -> None:
    """Start over as a new process would: nothing loaded, no compiler known."""
    cache.clear_memory_cache()
    with compiler._LOCK:
        compiler._FOUND.clear()
    gc.collect()


def _files(root: Path) -> dict[str, Path]:
    (so,) = (root / "kernels").glob("*.so")
    (plan,) = (root / "lowered").glob("*.json")
    return {"sidecar": so.with_suffix(".json"), "object": so, "copy": so.with_suffix(".c"),
            "lowered": plan, "compilers": root / "compilers.json"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def _paths(node, at=()):
    """Every place in a JSON tree, as a path of keys and indices."""
    yield at
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*at, k))
    elif isinstance(node, list):
        for k, v in enumerate(node):
            yield from _paths(v, (*at, k))


def _kind(v) -> str:
    return type(v).__name__  # bool and int differ, as they must


@st.composite
def damage(draw):
    which = draw(st.sampled_from(["sidecar", "object", "copy", "lowered", "compilers"]))
    how = draw(st.sampled_from(["replace", "delete", "truncate", "garbage"] if which not in ("object", "copy")
                               else ["truncate", "garbage"]))
    return which, how, draw(st.randoms(use_true_random=False)), draw(json_values), draw(st.binary(max_size=64))


def _damaged_json(data, rnd, value, how: str, mistyped_only: bool):
    places = [p for p in _paths(data) if how == "replace" or (p and isinstance(_get(data, p[:-1]), dict))]
    if not places:
        return value
    place = rnd.choice(places)
    if how == "replace" and mistyped_only and _kind(_get(data, place)) == _kind(value):
        value = [value]  # compilers.json holds answers: damage is a wrong type, not a plausible lie
    if not place:
        return value
    parent = _get(data, place[:-1])
    if how == "delete":
        del parent[place[-1]]
    else:
        parent[place[-1]] = value
    return data


def _get(node, path):
    for k in path:
        node = node[k]
    return node


def _write_new(path: Path, data: bytes) -> None:
    """Damage through a new file: the old object may still be mapped (changing it in place could
    crash this very process, which is not what is being tested)."""
    tmp = path.with_name(path.name + ".damage")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def damage_cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("damage-cache")
    old = os.environ.get("TESSEL_CACHE_DIR")
    os.environ["TESSEL_CACHE_DIR"] = str(root)
    _forget()
    _check(_build())
    yield root
    _forget()
    if old is None:
        os.environ.pop("TESSEL_CACHE_DIR")
    else:
        os.environ["TESSEL_CACHE_DIR"] = old


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damage())
def test_any_damaged_cache_file_is_ignored_and_rebuilt(damage_cache, case):
    which, how, rnd, value, garbage = case
    _forget()
    path = _files(damage_cache)[which]
    raw = path.read_bytes()
    if how == "truncate":
        new = raw[: rnd.randrange(max(len(raw), 1))]
    elif how == "garbage":
        new = garbage
    else:
        data = _damaged_json(json.loads(raw), rnd, value, how, mistyped_only=which == "compilers")
        new = json.dumps(data).encode()
    _write_new(path, new)
    f = _build()
    _check(f)
    files = _files(damage_cache)
    meta = json.loads(files["sidecar"].read_text())
    assert meta["sha256"] == hashlib.sha256(files["object"].read_bytes()).hexdigest()
    if which == "lowered":
        assert "outputs" in json.loads(files["lowered"].read_text())  # written whole again
    del f


@pytest.mark.parametrize("which, text", [
    ("sidecar", "null"), ("sidecar", "[]"), ("sidecar", '{"size": "12", "sha256": 5}'),
    ("compilers", "[]"), ("compilers", "null"), ("compilers", None), ("lowered", None),
])
def test_the_damages_the_issue_names(damage_cache, which, text):
    _forget()
    files = _files(damage_cache)
    if which == "compilers" and text is None:  # records with a missing or mistyped field
        stamps = json.loads(files["compilers"].read_text())
        key, record = next(iter(stamps.items()))
        v = record["version"]
        for bad in ({key: {"features": {}}}, {key: {"version": 3, "features": {}}},
                    {key: {"version": v, "features": []}}, {key: {"version": v, "features": {"openmp": "yes"}}},
                    {key: {"version": v, "features": {"vector_bytes_native": "wide"}}}, {key: None}):
            _write_new(files["compilers"], json.dumps(bad).encode())
            _forget()
            _check(_build())
        return
    if which == "lowered":
        plan = json.loads(files["lowered"].read_text())
        for outputs in ([7], [-1], ["1"], [None], [[1]], [True]):
            _write_new(files["lowered"], json.dumps(dict(plan, outputs=outputs)).encode())
            _forget()
            _check(_build())
        return
    _write_new(files[which], text.encode())
    _forget()
    _check(_build())


def test_the_isa_probe_is_remembered_across_processes_and_a_damaged_one_is_asked_again(tmp_path):
    """A new process that finds its kernels cached must not start the compiler to learn the
    vector width again; a mistyped remembered answer is dropped, not trusted."""
    import subprocess
    import sys

    env = {**os.environ, "TESSEL_CACHE_DIR": str(tmp_path)}
    probe = "import tessel.target as t; t.host(); from tessel.runtime.compiler import find_compiler; " \
            "print(sorted(k for k in find_compiler().features if k.startswith('isa:')))"
    subprocess.run([sys.executable, "-c", probe], env=env, check=True, capture_output=True)
    again = "from tessel.runtime.compiler import find_compiler; " \
            "print(sorted(k for k in find_compiler().features if k.startswith('isa:')))"
    out = subprocess.run([sys.executable, "-c", again], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.strip() not in ("", "[]")  # read back from compilers.json, no probe run
    path = tmp_path / "compilers.json"
    data = json.loads(path.read_text())
    for entry in data.values():
        for k in entry["features"]:
            if k.startswith("isa:"):
                entry["features"][k] = {"vector_bytes": 12, "features": "avx2"}
    path.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-c", again], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
