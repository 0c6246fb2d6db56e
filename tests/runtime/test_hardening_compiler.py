"""Issue 10, items 6 and 15: a hanging compiler, and a compiler without OpenMP.

The fake compilers here are shell scripts written into the test's own folder; they hand every
command they do not misbehave on to the real compiler.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.errors import BuildError, TesselWarning
from tessel.runtime import compiler
from tessel.runtime.compiler import NoOpenMPWarning, find_compiler


def _schedule(n: int, parallel: bool = False):
    A = te.placeholder((n, 6), name="A")
    B = te.compute((n, 6), lambda i, j: A[i, j] * 2.0 + 0.5, name="B")
    s = te.create_schedule(B.op)
    if parallel:
        s[B].parallel(B.op.axis[0])
    return s, [A, B]


def _check(f, n: int, **kw) -> None:
    a = np.random.default_rng(n).uniform(-2, 2, (n, 6)).astype("float32")
    b = np.full((n, 6), np.nan, "float32")
    f(a, b, **kw)
    np.testing.assert_allclose(b, a * 2.0 + 0.5, rtol=1e-6)


def _fake_cc(tmp_path: Path, name: str, body: str) -> str:
    """A $CC: ``body`` (sh) runs first; then the real compiler gets the same arguments."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\n{body}\nexec '{find_compiler().path}' \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def _hanging_cc(tmp_path: Path, when: str) -> tuple[str, Path, Path]:
    """A compiler that, when ``when`` (a sh command, always run) holds while ``marker`` exists, starts a child (as
    gcc starts cc1) and waits for it for a minute. Each child's pid is appended to ``pids``."""
    marker, pids = tmp_path / "hang", tmp_path / "children"
    body = (f"if {when} && [ -e '{marker}' ]; then\n"
            f"  sleep 60 &\n  echo $! >> '{pids}'\n  wait\nfi")
    return _fake_cc(tmp_path, "hanging-cc", body), marker, pids


def _gone(pid: int, wait_s: float = 10.0) -> bool:
    """Whether ``pid`` has ended (a zombie waiting for its parent counts as ended)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in "ZX":
            return True
        time.sleep(0.05)
    return False


def test_a_hanging_compiler_is_stopped_with_its_children_after_one_timeout(fresh_cache, tmp_path, monkeypatch):
    cc, marker, pids = _hanging_cc(tmp_path, "true")
    marker.touch()
    monkeypatch.setenv("CC", cc)
    monkeypatch.setenv("TESSEL_CC_TIMEOUT", "2")
    with pytest.raises(BuildError) as info:
        tessel.build(*_schedule(5))
    text = str(info.value)
    assert "did not finish within 2 s" in text and "TESSEL_CC_TIMEOUT" in text and cc in text
    children = [int(p) for p in pids.read_text().split()]
    assert len(children) == 1, "the compiler was run again after it had hung"
    assert all(_gone(p) for p in children), "a process the compiler started outlived the timeout"


def test_a_probe_that_timed_out_is_not_remembered_and_is_asked_again(fresh_cache, tmp_path, monkeypatch):
    log = tmp_path / "probes"
    cc, marker, pids = _hanging_cc(tmp_path, f'case "$*" in *probe.c*) echo x >> \'{log}\'; true;; *) false;; esac')
    marker.touch()
    monkeypatch.setenv("CC", cc)
    monkeypatch.setenv("TESSEL_CC_TIMEOUT", "2")
    with pytest.raises(BuildError, match="did not finish within 2 s"):
        tessel.build(*_schedule(6))
    assert all(_gone(int(p)) for p in pids.read_text().split())
    saved = json.loads((fresh_cache / "compilers.json").read_text())
    (record,) = [v for k, v in saved.items() if k.startswith(cc)]
    assert record["features"] == {}, "an answer that timed out was remembered"
    probes_before = len(log.read_text().split())
    marker.unlink()
    time.sleep(2.1)  # a compiler that hung is left alone for as long as the timeout
    monkeypatch.setenv("TESSEL_CC_TIMEOUT", "120")
    f = tessel.build(*_schedule(6))
    _check(f, 6)
    assert len(log.read_text().split()) > probes_before  # asked again
    saved = json.loads((fresh_cache / "compilers.json").read_text())
    (record,) = [v for k, v in saved.items() if k.startswith(cc)]
    assert type(record["features"].get("march_native")) is bool


@pytest.mark.parametrize("value", ["soon", "0", "-3", "inf", "nan"])
def test_a_malformed_timeout_is_a_build_error(monkeypatch, value):
    monkeypatch.setenv("TESSEL_CC_TIMEOUT", value)
    with pytest.raises(BuildError, match="TESSEL_CC_TIMEOUT"):
        compiler.cc_timeout()
    monkeypatch.delenv("TESSEL_CC_TIMEOUT")
    assert compiler.cc_timeout() == compiler.DEFAULT_CC_TIMEOUT_S
    monkeypatch.setenv("TESSEL_CC_TIMEOUT", "2.5")
    assert compiler.cc_timeout() == 2.5


def test_parallel_loops_without_openmp_warn_and_say_so(fresh_cache, tmp_path, monkeypatch):
    cc = _fake_cc(tmp_path, "cc-without-openmp",
                  'for a in "$@"; do\n  if [ "$a" = "-fopenmp" ]; then\n'
                  '    echo "cc: error: unsupported option -fopenmp" >&2; exit 1\n  fi\ndone')
    monkeypatch.setenv("CC", cc)
    with pytest.warns(NoOpenMPWarning) as caught:
        f = tessel.build(*_schedule(9, parallel=True))
    assert issubclass(NoOpenMPWarning, TesselWarning)
    message = str(caught[0].message)
    assert cc in message and "parallel" in message and "CC" in message
    assert f.serial_note and cc in f.serial_note
    assert "no OpenMP" in repr(f) and "serially" in repr(f)
    _check(f, 9, num_threads=3)
    # a kernel without parallel loops has nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoOpenMPWarning)
        g = tessel.build(*_schedule(10))
    assert g.serial_note is None and "OpenMP" not in repr(g)
    _check(g, 10)


def test_compiler_output_that_is_not_utf8_is_shown_not_raised(fresh_cache, tmp_path, monkeypatch):
    cc = _fake_cc(tmp_path, "cc-latin1", "case \"$*\" in *kernel.c*) printf 'erreur: \\351chec\\n' >&2; exit 1;; esac")
    monkeypatch.setenv("CC", cc)
    with pytest.raises(BuildError, match="erreur"):
        tessel.build(*_schedule(11))
