"""The measuring process: ``python -m tessel.tune.runner``, started fresh by the tuner.

It runs compiled candidates and nothing else, so a candidate that crashes takes only this
process down and one that hangs is killed with it (the tuner starts another). It is a fresh
interpreter, not a fork of the tuner, because an OpenMP runtime that has run a parallel region
does not survive ``fork`` (its thread pool is gone in the child and the next parallel region
waits forever), and a fresh process also measures without the tuner's memory and threads.

Protocol (JSON lines on stdin, answers on stdout): the first line names the ``.npz`` file of
inputs and reference outputs and the tolerances; each later line is one candidate (its
calling contract, from :func:`tessel.runtime.export.contract`, and ``number``/``repeat``);
the answer is ``{"costs": [seconds per run, one per repeat]}`` or ``{"error": text}``.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

WARMUP_SECONDS = 0.05  # untimed calls for at least this long before the timed ones (see warm_up)


def check(outputs: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol: float) -> str | None:
    """Why the outputs differ from the reference (None: they agree)."""
    for k, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if got.dtype.kind in "fc":
            scale = float(np.max(np.abs(want))) if want.size else 0.0
            ok = np.isclose(got, want, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True)
        else:
            ok = got == want
        if not np.all(ok):
            bad = np.argwhere(~ok)
            where = tuple(int(i) for i in bad[0])
            return (f"wrong values: output {k} differs from the reference at {len(bad)} of {ok.size} elements, "
                    f"first at {where}: {got[where]!r} instead of {want[where]!r}")
    return None


def warm_up(fn, calls: int = 2, seconds: float = WARMUP_SECONDS, *, clock=time.perf_counter) -> int:
    """Untimed calls of ``fn``, at least ``calls`` of them and for at least ``seconds``; how
    many. After an idle wait the cores and a thread pool take milliseconds to come back to
    speed: a 0.2 ms two-thread kernel (conv2d 1x1, AVX2 guest) ran its first millisecond of
    calls at 30 GFLOP/s, the next two at 111 and from then on at 124-136, so a kernel timed
    after two untimed calls was timed inside that ramp. Counting by time rather than by calls
    warms a 0.2 ms kernel and a 100 ms one alike. ``clock`` is the timer (a test's fake). The
    tuner's runner and the benchmark harness both warm up this way."""
    start = clock()
    done = 0
    while done < calls or clock() - start < seconds:
        fn()
        done += 1
    return done


def measure(kernel, inputs: list[np.ndarray], expected: list[np.ndarray], number: int, repeat: int,
            rtol: float, atol: float, warm: float = WARMUP_SECONDS, *, clock=time.perf_counter) -> dict:
    """Run once to check the values, warm the kernel up (:func:`warm_up`: short candidates
    would otherwise be ranked by how fast they wake up; the checked call counts towards it, so
    a candidate slower than ``warm`` is not run again), then ``repeat`` timings of ``number``
    runs each. ``clock`` is the timer (a test's fake)."""
    outs = [np.full_like(e, np.nan) if e.dtype.kind in "fc" else np.full_like(e, 7) for e in expected]
    arrays = [*inputs, *outs]
    start = clock()
    kernel(*arrays)
    first = clock() - start
    problem = check(outs, expected, rtol, atol)
    if problem:
        return {"error": problem, "kind": "wrong"}
    warm_up(lambda: kernel(*arrays), 0, warm - first, clock=clock)
    costs = []
    for _ in range(max(repeat, 1)):
        start = clock()
        for _ in range(max(number, 1)):
            kernel(*arrays)
        costs.append((clock() - start) / max(number, 1))
    return {"costs": costs}


def load_data(path: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    with np.load(path) as data:
        n_in, n_out = int(data["n_in"]), int(data["n_out"])
        return [data[f"in{i}"] for i in range(n_in)], [data[f"out{i}"] for i in range(n_out)]


def main() -> int:
    from ..runtime.loader import load_contract

    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what a kernel prints must not reach the answers
    setup = json.loads(sys.stdin.readline())
    inputs, expected = load_data(setup["data"])
    answers.write('{"ready": true}\n')  # the tuner counts the run timeout from here, not from the start
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            kernel = load_contract(request["contract"])
            answer = measure(kernel, inputs, expected, int(request.get("number", 1)), int(request.get("repeat", 1)),
                             float(setup["rtol"]), float(setup["atol"]))
        except Exception as e:  # a candidate's failure is data for the tuner, never the end of the runner
            answer = {"error": f"{type(e).__name__}: {e}", "kind": "run"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
