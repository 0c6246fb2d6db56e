"""Issue 10, item 13: what killed builds leave behind is swept, lock waits end, the cache has a
size limit, and ``tessel cache info|clear`` show and empty it."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.cli import main
from tessel.errors import BuildError
from tessel.runtime import cache, files
from tessel.runtime.compiler import find_compiler

REPO = Path(tessel.__file__).resolve().parent.parent


def _schedule(n: int, c: float = 1.0):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * c + 0.25, name="B")
    return te.create_schedule(B.op), [A, B]


def _check(f, n: int, c: float = 1.0) -> None:
    a = np.random.default_rng(n).uniform(-2, 2, n).astype("float32")
    b = np.full(n, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * np.float32(c) + np.float32(0.25), rtol=1e-6)


def _wait_for(path: Path, what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


_BUILD = """
import sys
from tessel import te
import tessel
A = te.placeholder((int(sys.argv[1]),), name="A")
B = te.compute(A.shape, lambda i: A[i] + 1.0, name="B")
tessel.build(te.create_schedule(B.op), [A, B])
"""


def test_a_killed_build_leaves_leftovers_that_the_next_build_sweeps(fresh_cache, tmp_path, monkeypatch):
    pidfile = tmp_path / "cc.pid"
    cc = tmp_path / "slow-cc"  # compiles only after a long pause, long enough to be killed in it
    cc.write_text(f"#!/bin/sh\ncase \"$*\" in *kernel.c*) echo $$ > '{pidfile}'; sleep 60;; esac\n"
                  f"exec '{find_compiler().path}' \"$@\"\n")
    cc.chmod(0o755)
    systmp = tmp_path / "systmp"
    systmp.mkdir()
    env = dict(os.environ, CC=str(cc), TMPDIR=str(systmp), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", _BUILD, "29"], env=env, cwd=str(REPO))
    try:
        _wait_for(pidfile, "the compiler to start")
    finally:
        proc.kill()
        proc.wait()
    os.killpg(int(pidfile.read_text()), signal.SIGKILL)  # as a reboot would end it too
    left = [p for p in fresh_cache.rglob("*") if p.name.endswith(".so.tmp") or p.name.startswith("tessel-cc-")]
    assert len(left) == 2  # the object being written, the compiler's folder
    foreign = [fresh_cache / "kernels" / "notes.txt", fresh_cache / "tmp" / "mine"]
    for p in foreign:
        p.write_text("not tessel's")
    f = tessel.build(*_schedule(31))  # a new kernel: a miss sweeps what dead processes left
    _check(f, 31)
    assert not [p for p in left if p.exists()]
    assert all(p.exists() for p in foreign)  # only tessel's own leftovers go
    assert not list(systmp.iterdir())  # and nothing was ever put in the system's temporary folder
    assert not list((fresh_cache / "kernels").glob("*.lock"))  # locks are removed by their holder


def test_leftovers_of_live_processes_go_only_when_old(fresh_cache):
    kernels = fresh_cache / "kernels"
    kernels.mkdir(parents=True)
    live = kernels / f".0123{files.owner_tag().replace(str(os.getpid()), '1')}abcdefgh.so.tmp"  # pid 1 lives
    live.write_bytes(b"x")
    old = kernels / ".0123.0000abcd-7.abcdefgh.so.tmp"  # another host's: age alone decides
    old.write_bytes(b"x")
    os.utime(old, (time.time() - files.STALE_AGE_S - 60,) * 2)
    assert files.sweep_leftovers() == 1
    assert live.exists() and not old.exists()


def test_a_lock_held_by_a_stopped_process_is_waited_for_a_bounded_time(fresh_cache, monkeypatch):
    f = tessel.build(*_schedule(37))
    lock = Path(f.lib_path).with_suffix(".lock")
    for suffix in (".so", ".json", ".c"):
        Path(f.lib_path).with_suffix(suffix).unlink()
    del f
    gc.collect()
    cache.clear_memory_cache()
    ready = lock.with_suffix(".ready")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import os, signal, sys, pathlib\n"
        "from tessel.runtime.files import key_lock\n"
        "with key_lock(pathlib.Path(sys.argv[1]), 'test'):\n"
        "    pathlib.Path(sys.argv[2]).touch()\n"
        "    os.kill(os.getpid(), signal.SIGSTOP)\n"), str(lock), str(ready)],
        env=dict(os.environ, PYTHONPATH=str(REPO)))
    watchdog = threading.Timer(60, holder.kill)  # without a bound the build would wait for this
    watchdog.start()
    try:
        _wait_for(ready, "the other process to take the lock")
        monkeypatch.setenv("TESSEL_LOCK_TIMEOUT", "1.5")
        with pytest.raises(BuildError) as info:
            tessel.build(*_schedule(37))
        text = str(info.value)
        assert f"process {holder.pid}" in text and "stopped" in text and "TESSEL_LOCK_TIMEOUT" in text
        assert str(lock) in text
    finally:
        watchdog.cancel()
        holder.kill()
        holder.wait()
    monkeypatch.delenv("TESSEL_LOCK_TIMEOUT")
    _check(tessel.build(*_schedule(37)), 37)  # its lock died with it


def _entry_keys(root: Path) -> list[str]:
    return [e.key for e in files.entries(root) if e.kind == "kernel"]


def test_the_cache_is_kept_under_its_limit_least_recently_used_first(fresh_cache, monkeypatch):
    first = tessel.build(*_schedule(41, 0.5))  # kept alive (in use) all along, though the oldest
    _check(first, 41, 0.5)
    entry = sum(e.size for e in files.entries(fresh_cache))
    monkeypatch.setenv("TESSEL_CACHE_MAX_MB", str(4.5 * entry / 2**20))  # room for about four
    keys = []
    for k in range(8):
        f = tessel.build(*_schedule(43 + k, 1.5 + k))
        _check(f, 43 + k, 1.5 + k)
        keys.append(Path(f.lib_path).stem)
        del f
        gc.collect()  # no longer in use: it may go
    left = _entry_keys(fresh_cache)
    assert sum(e.size for e in files.entries(fresh_cache)) <= 4.5 * entry
    assert Path(first.lib_path).stem in left  # in use: never evicted
    assert keys[-1] in left and keys[0] not in left  # the newest stays, the oldest went
    gone = [k for k in keys if k not in left]
    assert gone == keys[: len(gone)]  # in the order they were last used
    _check(first, 41, 0.5)


def test_cache_limit_must_be_a_size(monkeypatch):
    monkeypatch.setenv("TESSEL_CACHE_MAX_MB", "lots")
    with pytest.raises(BuildError, match="TESSEL_CACHE_MAX_MB"):
        files.max_bytes()
    monkeypatch.setenv("TESSEL_CACHE_MAX_MB", "0")
    assert files.max_bytes() is None


def test_cache_info_and_clear(fresh_cache, capsys, monkeypatch):
    monkeypatch.setenv("TESSEL_CACHE_MAX_MB", "64")
    for k in range(3):
        _check(tessel.build(*_schedule(53 + k)), 53 + k)
    size = sum(e.size for e in files.entries(fresh_cache))
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(fresh_cache) in out and "3 compiled kernel(s)" in out and "3 remembered plan(s)" in out
    assert f"({size} bytes)" in out and f"({64 * 2**20} bytes)" in out
    mine = fresh_cache / "kernels" / "README"
    mine.write_text("not tessel's")
    assert main(["cache", "clear"]) == 0
    assert "removed 6 entries" in capsys.readouterr().out
    assert not files.entries(fresh_cache) and mine.exists()
    assert not (fresh_cache / "compilers.json").exists()
    assert main(["cache", "info"]) == 0
    assert "0 compiled kernel(s)" in capsys.readouterr().out
    _check(tessel.build(*_schedule(53)), 53)  # and builds go on
