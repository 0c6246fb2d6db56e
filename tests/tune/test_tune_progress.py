"""Progress a person can follow, and Ctrl-C keeps the best found so far."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from kernels import matmul

import tessel
from tessel.tune import Progress, RandomTuner, Task, load, tune
from tessel.tune.progress import duration, speed


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_not_on_a_terminal_progress_is_plain_lines():
    out = io.StringIO()
    result = tune(matmul, (8, 4, 8), trials=4, tuner="grid", batch_size=2, progress=out)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert lines[0].startswith("tune ") and "2/4 trials" in lines[0] and "best" in lines[0] and "left" in lines[0]
    assert "4/4 trials" in lines[1] and "GFLOP/s" in lines[1]
    assert "done, 4/4 trials" in lines[-1] and result.trials == 4


def test_on_a_terminal_progress_is_one_redrawn_bar():
    term = _Terminal()
    bar = Progress("tune x", 10, flop=2e9, stream=term)
    assert bar.tty
    bar.update(5, 0.5, 1)
    bar.close()
    text = term.getvalue()
    assert text.startswith("\rtune x [############............] 5/10 trials, best 4.00 GFLOP/s (500.000 ms), 1 failed")
    assert text.count("\n") == 1


def test_durations_and_speeds_read_as_a_person_writes_them():
    assert [duration(s) for s in (4.2, 75, 7300, float("nan"))] == ["4s", "1m15s", "2h01m", "?"]
    assert speed(float("inf"), 1e9) == "none yet" and speed(0.002, 0) == "2.000 ms"


def test_ctrl_c_stops_and_keeps_the_best_so_far(tmp_path):
    log = tmp_path / "i.log"
    task = Task(matmul, (8, 6, 8))
    tuner = RandomTuner(task, batch_size=2)

    def interrupt(tuner, inputs, results):
        raise KeyboardInterrupt  # what Ctrl-C raises in the tuner's process

    out = io.StringIO()
    tuner.tune(10, {"n_parallel": 2}, callbacks=[interrupt], log=log, progress=out)
    assert tuner.interrupted and tuner.trials == 2 and tuner.best is not None
    assert "interrupted: keeping the best so far" in out.getvalue()
    assert len(list(load(log))) == 2  # what was measured is kept, so a rerun resumes after it


_SCRIPT = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even if started with SIGINT ignored (a background shell)
sys.path.insert(0, {tests!r})
from kernels import matmul
from tessel.tune import tune

class Watcher:  # the progress stream: a person presses Ctrl-C once the first batch is shown
    def write(self, text):
        sys.stdout.write(text)
        if ": 2/" in text:
            os.kill(os.getpid(), signal.SIGINT)
    def flush(self):
        sys.stdout.flush()

r = tune(matmul, (32, 32, 32), trials=500, tuner="random", batch_size=2, log={log!r}, build_timeout=60,
         progress=Watcher())
print("RESULT", r.interrupted, r.trials, r.config is not None, flush=True)
"""


def test_a_real_sigint_stops_the_tuner_cleanly(tmp_path):
    """SIGINT (what Ctrl-C sends) reaches only the tuner: its children ignore it and the runner
    sits in a session of its own, so the tuner stops, closes them and returns."""
    log = tmp_path / "sig.log"
    script = _SCRIPT.format(tests=str(Path(__file__).parent), log=str(log))
    env = {**os.environ, "PYTHONPATH": str(Path(tessel.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    result = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert result and result[0].split()[1:] == ["True", "2", "True"] and len(list(load(log))) == 2
    assert "interrupted: keeping the best so far" in done.stdout
