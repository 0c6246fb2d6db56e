"""Building and measuring candidates, isolated: what fails is recorded, and the tuning goes on.

Each candidate is built in a forked child (several at once): the template runs with its
config, the schedule is lowered and compiled, the loop features are taken, and the child
sends back the kernel's calling contract. A child that raises, crashes or outlives the build
timeout is a failed build with its reason. A tuning job's time limit (``deadline``) cuts the
builds still running when it passes and skips the runs not yet started: those candidates come
back with the kind "limit", which the tuner drops unrecorded. Compiled kernels are then run by one measuring
process (:mod:`tessel.tune.runner`), a fresh interpreter: a crash or a hang there costs that
candidate (recorded with the signal or "timeout") and a restart of the runner, nothing more.
Every run is checked against a reference first, so a candidate computing wrong values fails.
Kernels of the python target live only in the process that built them, so their builder
child measures them itself.
"""

from __future__ import annotations

import faulthandler
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TuneError
from . import runner as _runner
from .features import loop_features
from .space import ConfigEntity, FallbackConfigEntity

RTOL, ATOL = 1e-4, 1e-5
START_TIMEOUT = 120.0  # seconds for a fresh measuring process to import tessel and load the data


@dataclass
class MeasureResult:
    """One candidate's outcome: ``costs`` in seconds (empty on failure), ``error`` the reason,
    ``error_kind`` "build" / "run" / "wrong" / "timeout" / "crash" / "invalid", or "limit": not
    measured because the job's time limit passed first (never recorded)."""

    config: ConfigEntity
    costs: list[float] = field(default_factory=list)
    error: str | None = None
    error_kind: str | None = None
    build_s: float = 0.0
    features: list[float] | None = None
    timestamp: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)

    @property
    def cost(self) -> float:
        return float(np.mean(self.costs)) if self.ok else float("inf")

    @property
    def error_no(self) -> int:
        """AutoTVM's numbering: 0 no error, 1 invalid, 2 compile error, 4 runtime error, 6 timeout."""
        return {None: 0, "invalid": 1, "build": 2, "crash": 4, "run": 4, "wrong": 4, "timeout": 6}.get(
            self.error_kind, 7)


# ---- inputs and the reference ---------------------------------------------------------------


def _is_input(t) -> bool:
    return type(t.op).__name__ == "PlaceholderOp"


def _random(shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dt)
    return rng.integers(0, 8, size=shape).astype(dt)


def _shape(t, task) -> list[int]:
    """The tensor's shape with its symbolic sizes at the task's representative values."""
    from ..ir.functor import free_vars
    from ..runtime.args import eval_int

    env = {id(v): task.sizes[v.name] for d in t.shape for v in free_vars(d)}
    return [eval_int(d, env, task.name) for d in t.shape]


def reference_data(task, reference=None, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random inputs for the task's kernel and the outputs it must compute: ``reference(*inputs)``
    when given (NumPy), else the task's computation built without any schedule."""
    from .. import driver
    from ..schedule import create_schedule

    _, tensors = task.instantiate(FallbackConfigEntity())
    ins = [t for t in tensors if _is_input(t)]
    outs = [t for t in tensors if not _is_input(t)]
    if [*ins, *outs] != list(tensors):
        raise TuneError(f"task {task.name}: the template must list the inputs first, then the outputs "
                        f"(got {[t.name for t in tensors]})")
    rng = np.random.default_rng(seed)
    inputs = [_random(_shape(t, task), str(t.dtype), rng) for t in ins]
    if reference is not None:
        got = reference(*inputs)
        expected = [np.asarray(a) for a in (got if isinstance(got, list | tuple) else [got])]
    else:
        kind = "python" if task.target.kind == "python" else "c"
        naive = driver.build(create_schedule([t.op for t in outs]), list(tensors), target=kind)
        expected = [np.zeros(_shape(t, task), dtype=str(t.dtype)) for t in outs]
        naive(*inputs, *expected)
    if len(expected) != len(outs):
        raise TuneError(f"task {task.name}: the reference gave {len(expected)} outputs, the kernel writes {len(outs)}")
    return inputs, expected


# ---- building, in forked children -----------------------------------------------------------


def features(task, cfg: ConfigEntity) -> list[float]:
    """The model's view of a candidate: loop features of its lowered kernel, then its knobs."""
    from .. import driver

    sch, tensors = task.instantiate(cfg)
    return loop_features(driver.lower(sch, list(tensors)), task.flop) + cfg.get_flatten_feature()


def _lowering_target():
    """The target ``features`` lowers for (``driver.lower``'s default: this machine's C)."""
    from ..target import as_target, resolve

    return resolve(as_target(None))


def _build_child(task, cfg: ConfigEntity, data: tuple | None, known: dict | None = None) -> dict:
    """In the child: the candidate's kernel as a contract (or, python target, its measurement);
    with ``data == "features"``, only its features (``known``: those the tuner has already)."""
    from .. import driver
    from ..runtime.export import contract

    start = time.perf_counter()
    if data == "features":
        return {"features": features(task, cfg)}
    sch, tensors = task.instantiate(cfg)
    if not cfg.valid():
        return {"error": "invalid config: " + "; ".join(cfg.errors), "kind": "invalid"}
    kernel = driver.build(sch, list(tensors), target=task.target)
    if known and cfg.index in known:
        feats = known[cfg.index]
    elif task.target == _lowering_target():  # the kernel's own lowering is the one features() makes
        feats = loop_features(kernel.func, task.flop) + cfg.get_flatten_feature()
    else:
        feats = features(task, cfg)
    msg = {"features": feats, "build_s": time.perf_counter() - start}
    if task.target.kind == "python":
        inputs, expected, number, repeat = data
        msg.update(_runner.measure(kernel, inputs, expected, number, repeat, RTOL, ATOL))
    else:
        msg["contract"] = contract(kernel)
    return msg


def _fork_build(task, cfg: ConfigEntity, data: tuple | None, known: dict | None) -> tuple[int, int]:
    """Start one build; returns the child's pid and the read end of its answer pipe."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(rd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the tuner's to handle
            faulthandler.disable()  # a crash is an answer (the exit status), not a traceback on the tuner's stderr
            try:
                msg = _build_child(task, cfg, data, known)
            except BaseException as e:
                msg = {"error": f"{type(e).__name__}: {e}", "kind": "build"}
            with os.fdopen(wr, "w") as f:
                f.write(json.dumps(msg))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(wr)
    return pid, rd


def _signal_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"crashed with {signal.Signals(sig).name}"
        except ValueError:
            return f"crashed with signal {sig}"
    return f"exited with status {os.WEXITSTATUS(status)} without an answer"


@dataclass
class _Child:
    index: int
    pid: int
    fd: int
    deadline: float
    chunks: list[bytes] = field(default_factory=list)


def build_all(task, configs: list[ConfigEntity], n_parallel: int, timeout: float,
              data: tuple | str | None = None, known: dict | None = None, deadline: float | None = None) -> list[dict]:
    """Build ``configs`` in up to ``n_parallel`` children at once; one answer dict per config.
    ``deadline`` (``time.monotonic()``): no build starts after it, none runs past it."""
    answers: list[dict | None] = [None] * len(configs)
    waiting = list(range(len(configs)))
    running: dict[int, _Child] = {}
    end = math.inf if deadline is None else deadline
    try:
        while waiting or running:
            while waiting and len(running) < max(n_parallel, 1) and time.monotonic() < end:
                i = waiting.pop(0)
                pid, fd = _fork_build(task, configs[i], data, known)
                running[fd] = _Child(i, pid, fd, min(time.monotonic() + timeout, end))
            if not running:  # the time limit passed with builds still waiting
                break
            _collect(running, answers, end)
    finally:
        for child in running.values():  # interrupted: no child outlives the tuner
            _kill(child.pid)
            os.close(child.fd)
    for i in waiting:
        answers[i] = LIMIT
    return [a or {"error": "no answer", "kind": "crash"} for a in answers]


LIMIT = {"error": "not measured: the tuning job's time limit passed", "kind": "limit"}


def _collect(running: dict[int, _Child], answers: list, end: float = math.inf) -> None:
    """Wait a little for the running children; file the answers of those that finished."""
    now = time.monotonic()
    wait = max(0.0, min(c.deadline for c in running.values()) - now)
    ready, _, _ = select.select(list(running), [], [], min(wait, 0.5))
    for fd in ready:
        data = os.read(fd, 1 << 16)
        child = running[fd]
        if data:
            child.chunks.append(data)
            continue
        os.close(fd)
        del running[fd]
        _, status = os.waitpid(child.pid, 0)
        try:
            answers[child.index] = json.loads(b"".join(child.chunks))
        except ValueError:
            answers[child.index] = {"error": f"the build {_signal_text(status)}", "kind": "crash"}
    for fd, child in list(running.items()):
        if time.monotonic() > child.deadline:
            _kill(child.pid)
            os.close(fd)
            del running[fd]
            answers[child.index] = LIMIT if child.deadline >= end else \
                {"error": "the build did not finish within the build timeout", "kind": "timeout"}


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


# ---- running, in the measuring process ------------------------------------------------------


class RunnerProcess:
    """The measuring process (:mod:`tessel.tune.runner`), restarted after a crash or a hang."""

    def __init__(self, data_path: str, timeout: float):
        self.data_path, self.timeout = data_path, timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        proc = subprocess.Popen([sys.executable, "-m", "tessel.tune.runner"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True)  # Ctrl-C in the terminal is the tuner's, not its
        setup = {"data": self.data_path, "rtol": RTOL, "atol": ATOL}
        proc.stdin.write((json.dumps(setup) + "\n").encode())
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
        if not ready or not proc.stdout.readline():
            proc.kill()
            proc.wait()
            raise TuneError(f"the measuring process (python -m tessel.tune.runner) did not start within "
                            f"{START_TIMEOUT:g} s; check that {sys.executable} imports tessel")
        return proc

    def run(self, contract: dict, number: int, repeat: int) -> dict:
        """One candidate's measurement; a crash or a timeout is an answer too."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        try:
            proc.stdin.write((json.dumps({"contract": contract, "number": number, "repeat": repeat}) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            return self._lost(proc, False)
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
        if not ready:
            return self._lost(proc, True)
        line = proc.stdout.readline()
        if not line:
            return self._lost(proc, False)
        return json.loads(line)

    def _lost(self, proc: subprocess.Popen, hung: bool) -> dict:
        proc.kill()
        status = proc.wait()
        self.proc = None
        if hung:
            return {"error": f"the run did not finish within the run timeout ({self.timeout:g} s)", "kind": "timeout"}
        name = signal.Signals(-status).name if status < 0 and -status in signal.valid_signals() else str(status)
        return {"error": f"the run crashed the measuring process ({name})", "kind": "crash"}

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


class Measurer:
    """Builds and runs batches of configs of one task: ``measure(configs) -> [MeasureResult]``."""

    def __init__(self, task, workdir: str, *, n_parallel: int | None = None, build_timeout: float = 10.0,
                 run_timeout: float = 10.0, number: int = 3, repeat: int = 1, reference=None, seed: int = 0):
        self.task, self.number, self.repeat = task, number, repeat
        self.n_parallel = n_parallel or max(os.cpu_count() or 1, 1)
        self.build_timeout = build_timeout
        inputs, expected = reference_data(task, reference, seed)
        self.data = (inputs, expected, number, repeat)
        path = os.path.join(workdir, "data.npz")
        arrays = {f"in{i}": a for i, a in enumerate(inputs)} | {f"out{i}": a for i, a in enumerate(expected)}
        np.savez(path, n_in=len(inputs), n_out=len(expected), **arrays)
        self.runner = RunnerProcess(path, run_timeout)

    def measure(self, configs: list[ConfigEntity], known: dict | None = None,
                deadline: float | None = None) -> list[MeasureResult]:
        """``known``: features by config index that need not be computed again; ``deadline``
        (``time.monotonic()``): what is not built or run by then comes back as "limit"."""
        python = self.task.target.kind == "python"
        built = build_all(self.task, configs, self.n_parallel, self.build_timeout, self.data if python else None,
                          known, deadline)
        out = []
        for cfg, b in zip(configs, built, strict=True):
            res = MeasureResult(cfg, build_s=float(b.get("build_s", 0.0)), features=b.get("features"))
            if "contract" in b and deadline is not None and time.monotonic() >= deadline:
                b = LIMIT
            elif "contract" in b:
                b = self.runner.run(b["contract"], self.number, self.repeat)
            res.costs = [float(c) for c in b.get("costs", [])]
            res.error, res.error_kind = b.get("error"), b.get("kind") if b.get("error") else None
            out.append(res)
        return out

    def close(self) -> None:
        self.runner.close()
