"""Issue 10, items 3 and 12: a kernel name is data, and every misuse of ``build`` is a TesselError.

A name never becomes a file path (nothing is written outside the cache) nor a compiler argument;
wrong arguments to ``build`` and a malformed ``$CC`` are refused with an error of tessel's that
says what is wrong and what to pass instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.errors import BuildError, DefinitionError, TesselError
from tessel.runtime.compiler import find_compiler


def _schedule(n: int = 13):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0 - 1.0, name="B")
    return te.create_schedule(B.op), [A, B]


def _check(f, n: int = 13) -> None:
    a = np.random.default_rng(3).uniform(-2, 2, n).astype("float32")
    b = np.full(n, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 3.0 - 1.0, rtol=1e-6)


def _logging_cc(tmp_path: Path) -> tuple[str, Path]:
    """A $CC that writes each command line it gets (one argument a line) and runs the real one."""
    real = find_compiler().path
    log = tmp_path / "cc-argv.log"
    script = tmp_path / "logging-cc"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" '--end--' >> '{log}'\nexec '{real}' \"$@\"\n")
    script.chmod(0o755)
    return str(script), log


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if not p.is_dir()}


def test_names_never_become_paths_or_compiler_options(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    work = tmp_path / "work" / "a" / "b"
    work.mkdir(parents=True)
    (tmp_path / "systmp").mkdir()
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(cache))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "systmp"))
    monkeypatch.chdir(work)
    cc, log = _logging_cc(tmp_path)
    monkeypatch.setenv("CC", cc)
    absolute = str(tmp_path / "outside" / "evil")
    names = ["../../escaped", "../../../escaped", absolute, "-v", "--help", "-o",
             "-fplugin=evil", "-shared", "x -o y", ".", "..", "a/b", "kernel", "kernel.c", ""]
    before = _files(tmp_path)
    for k, name in enumerate(names):
        sch, args = _schedule(13 + k)  # a different kernel each time: every one is compiled
        f = tessel.build(sch, args, name=name)
        _check(f, 13 + k)
        assert f.name == name
    written = _files(tmp_path) - before
    outside = {p for p in written if cache not in p.parents and p != log}
    assert not outside, f"written outside the cache: {sorted(outside)}"
    assert not (tmp_path / "outside").exists()
    cache_names = {p.name for p in written if cache in p.parents}
    assert all(n.isascii() and n.replace(".", "").replace("_", "").isalnum() for n in cache_names)
    runs = log.read_text().split("--end--\n")
    compiles = [r.splitlines() for r in runs if "-lm" in r.splitlines()]
    assert len(compiles) == len(names)
    # every compile gets the same command line but for its output, a file in the cache: the
    # names reached neither the arguments nor the paths
    shapes = set()
    for argv in compiles:
        out = Path(argv[argv.index("-o") + 1])
        assert out.is_absolute() and out.parent == cache / "kernels"
        shapes.add(tuple(a for a in argv if a != str(out)))
    assert len(shapes) == 1
    assert "kernel.c" in next(iter(shapes))


@pytest.mark.parametrize("call, error, words", [
    (lambda s, a: tessel.build(s, a, name="k\0x"), BuildError, ["NUL", "name"]),
    (lambda s, a: tessel.build(s, None), DefinitionError, ["args", "list of the tensors", "None"]),
    (lambda s, a: tessel.build(s, a[0]), DefinitionError, ["args", "list of the tensors"]),
    (lambda s, a: tessel.build(s, "AB"), DefinitionError, ["args", "list of the tensors"]),
    (lambda s, a: tessel.build(s, a, name=123), DefinitionError, ["name", "str", "int"]),
    (lambda s, a: tessel.build(s, a, name=None), DefinitionError, ["name", "str"]),
    (lambda s, a: tessel.build(None, a), DefinitionError, ["schedule", "create_schedule"]),
    (lambda s, a: tessel.build(s, a, target="C"), BuildError, ["unknown target", "c, cuda, cuda-sim, python"]),
    (lambda s, a: tessel.build(s, a, target="opencl"), BuildError, ["unknown target", "c, cuda, cuda-sim, python"]),
    (lambda s, a: tessel.build(s, a, target=""), BuildError, ["empty target", "c, python"]),
    (lambda s, a: tessel.build(s, a, target=["c"]), BuildError, ["target must be a string", "Target"]),
])
def test_misuse_of_build_is_a_tessel_error_that_says_what_to_pass(call, error, words):
    sch, args = _schedule()
    with pytest.raises(error) as info:
        call(sch, args)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("var, value", [("CC", "gcc '"), ("CC", 'cc "-O2'), ("TESSEL_CFLAGS", "-O2 '-g")])
def test_unbalanced_quotes_in_the_compiler_environment(fresh_cache, monkeypatch, var, value):
    if var == "CC":
        value = value.replace("gcc", find_compiler().path).replace("cc ", find_compiler().path + " ")
    monkeypatch.setenv(var, value)
    sch, args = _schedule(17)
    with pytest.raises(BuildError) as info:
        tessel.build(sch, args)
    assert f"${var}" in str(info.value) and "quoting" in str(info.value)
    assert isinstance(info.value, TesselError)


def test_lone_surrogate_and_control_characters_in_the_name_are_data(fresh_cache):
    for name in ("a\udc80b", "tab\tnew\nline\r", "\x7f\x01", "é名前"):
        sch, args = _schedule(19)
        f = tessel.build(sch, args, name=name)
        _check(f, 19)
        assert f.name == name
    assert not (Path(os.environ["TESSEL_CACHE_DIR"]) / "tmp").exists() or \
        not list((Path(os.environ["TESSEL_CACHE_DIR"]) / "tmp").iterdir())


def test_cache_directory_given_relative_is_made_absolute(tmp_path, monkeypatch):
    """A relative $TESSEL_CACHE_DIR such as ``-cache`` must not reach the compiler as ``-o -cache/...``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TESSEL_CACHE_DIR", "-cache")
    sch, args = _schedule(23)
    f = tessel.build(sch, args)
    _check(f, 23)
    assert Path(f.lib_path).is_absolute() and (tmp_path / "-cache" / "kernels").is_dir()
    shutil.rmtree(tmp_path / "-cache")


@pytest.mark.parametrize("call, words", [
    (lambda s, a: tessel.lower(s, None), ["lower(sch, args)", "list of the tensors", "None"]),
    (lambda s, a: tessel.lower(None, a), ["lower(sch, args)", "create_schedule"]),
    (lambda s, a: tessel.lower(s, a, name=7), ["lower(", "name", "str"]),
])
def test_misuse_of_lower_is_a_definition_error(call, words):
    sch, args = _schedule()
    with pytest.raises(DefinitionError) as info:
        call(sch, args)
    for w in words:
        assert w in str(info.value)
