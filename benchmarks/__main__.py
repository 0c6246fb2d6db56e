"""``python -m benchmarks``: every kernel, every contender, one process, one table.

    python -m benchmarks [--quick] [--repeat N] [--only matmul,blur] [--out results]
                         [--auto-budget N] [--auto-seconds S] [--metaschedule-trials N]

First the machine: its FMA peak (as many accumulator chains as the Target's registers hold)
and its copy bandwidth. For each kernel: ``tessel.auto_schedule`` schedules the bare
definition (``benchmarks/definitions.py``; ``--auto-budget`` trials of its search, for
``--auto-seconds`` at most) as the "auto" contender, and the peers' automatic schedulers
schedule theirs (:mod:`benchmarks.auto_peers`: Halide's three autoschedulers, the best of them
"Halide auto", and TVM MetaSchedule at ``--metaschedule-trials``), each with the seconds it took
from definition to compiled kernel; tessel's hand schedule from ``examples/`` (every tile
derived from this machine's Target) is built twice, cold (into a fresh cache directory; the C
compiler's share timed apart) and cached (the in-process memo dropped, so the shared object
comes from the disk cache: what a second run of a program sees); NumPy (writing into
preallocated outputs), PyTorch on the CPU, Halide and TVM (when installed) compute the same
thing. Every contender's output is checked against NumPy's before anything is timed.
Then the contenders take turns in blocks of calls (rounds of three calls each, six rounds at
least, alternating order, a wait until
the process is idle and untimed calls for 50 ms, two at least, before each block: OpenBLAS's, OpenMP's, Halide's and
TVM's worker threads spin for a while after a call and would otherwise steal the cores from the
next contender; every contender's arrays are 128-byte aligned alike, but TVM copies its inputs into its own 64-byte-aligned tensors),
``--repeat`` timed calls in all, summarized by their median: on a shared machine a burst of
load then hits every contender alike. Each kernel has a yardstick, timed right after each
block of tessel's calls (one thread pool, so no pause between them): for a bandwidth-bound
kernel (GB/s) tessel's plain copy of 2 x 64 MiB, for a compute-bound one (GFLOP/s) the FMA
peak loop on as many threads, so that "% of copy" and "% of peak" compare two figures taken
under the same load rather than one from the start of the run and one from minutes later. A
contender faster than the run's best FMA peak is flagged: that is a fault of the measurement.

Writes ``results/benchmarks.md`` (the table and the machine's measured peaks),
``results/benchmarks.json`` and, with matplotlib, ``results/benchmarks.png``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tessel.tune.runner import warm_up

from . import auto_peers, machine, peers_tvm
from .kernels import Case, cases
from .peer_base import PeerUnavailable, aligned_empty
from .timing import between_calls, rounds

PEERS = ("torch", "halide", "tvm")


@dataclass
class Row:
    kernel: str
    size: str
    unit: str
    threads: str
    seconds: dict[str, float | None] = field(default_factory=dict)   # median per contender
    rate: dict[str, float | None] = field(default_factory=dict)      # GFLOP/s or GB/s
    build_s: dict[str, float | None] = field(default_factory=dict)   # cold build
    cc_s: float | None = None                                         # the C compiler's part of tessel's
    cpu_s: tuple[float, float] | None = None                          # CPU seconds of it: tessel's, cc's
    cached_s: float | None = None                                     # tessel's cached build
    peak: float | None = None                                         # FMA peak at this thread count
    peak_rounds: float | None = None                                  # the same, timed in this row's rounds
    interval_build_s: float | None = None                             # cold build, exact=False
    analysis_s: float | None = None                                   # the exact analysis alone
    copy_rate: float | None = None                                    # GB/s of the copy yardstick
    auto_s: float | None = None                                       # tessel.auto_schedule (+ its search) and build
    auto_knobs: dict[str, object] = field(default_factory=dict)       # the knob values auto_schedule chose
    tune_s: dict[str, float | None] = field(default_factory=dict)    # automatic contenders: scheduling + build
    halide_auto: str | None = None                                    # the autoscheduler behind "Halide auto"
    notes: dict[str, str] = field(default_factory=dict)               # why a contender has no number


class _CompilerClock:
    """Seconds spent in the C compiler while it is installed (the harness's instrument only),
    and CPU seconds of this thread and of the process's children (the compiler) meanwhile: on
    a loaded machine wall time measures the load, CPU time where the build's work goes (the
    thread's, not the process's: the peers' idle thread pools spin on the process's account)."""

    def __enter__(self):
        from tessel.runtime import cache

        self.module, self.real, self.seconds = cache, cache.compile_shared, 0.0
        self.cpu0 = (time.thread_time(), _children_cpu())

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return self.real(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        cache.compile_shared = timed
        return self

    def __exit__(self, *exc) -> None:
        self.module.compile_shared = self.real
        self.cpu = (time.thread_time() - self.cpu0[0], _children_cpu() - self.cpu0[1])


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _tessel(case: Case, inputs: list[np.ndarray]):
    import tessel
    from tessel.driver import forget_lowerings
    from tessel.poly.analysis import forget
    from tessel.runtime.cache import clear_memory_cache

    # cold: nothing on disk or in memory from earlier cases (matmul 1024 on one thread is the
    # kernel of matmul 1024 on two)
    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-bench-cache-")
    clear_memory_cache()
    forget()
    forget_lowerings()
    s, args = case.tessel()
    with _CompilerClock() as cc:
        t0 = time.perf_counter()
        f = tessel.build(s, args)
        cold = time.perf_counter() - t0
    clear_memory_cache()
    s, args = case.tessel()
    t0 = time.perf_counter()
    f = tessel.build(s, args)
    cached = time.perf_counter() - t0
    out = aligned_empty(case.out_shape, dtype=case.out_dtype)
    kw = {"num_threads": case.threads} if case.threads else {}
    return (lambda: f(*inputs, out, **kw)), (lambda: out), cold, cc, cached


def _auto(case: Case, inputs: list[np.ndarray], row: Row, budget: int, seconds: float | None = None) -> dict:
    """tessel.auto_schedule's schedule of the bare definition (its search at ``budget``
    trials, stopped after ``seconds`` if given), built; the time from the definition to the
    built kernel in ``row.auto_s``."""
    import tessel
    from tessel.autosched import auto_schedule_result

    d = case.auto()
    t0 = time.perf_counter()
    try:
        r = auto_schedule_result(d.outputs, budget=budget, timeout=seconds)
        f = tessel.build(r.schedule, d.params + d.outputs)
    except tessel.TesselError as e:
        row.notes["auto"] = f"failed: {type(e).__name__}"
        print(f"  auto_schedule failed on {case.kernel} {case.size}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        return {}
    row.auto_s = row.tune_s["auto"] = time.perf_counter() - t0
    row.auto_knobs = dict(r.knobs)  # in the JSON: which point of its space the auto contender is
    out = aligned_empty(case.out_shape, dtype=case.out_dtype)
    kw = {"num_threads": case.threads} if case.threads else {}
    return {"auto": ((lambda: f(*inputs, out, **kw)), (lambda: out))}


def _exact_cost(case: Case) -> tuple[float, float]:
    """The cold build with InferBound's boxes (``exact=False``, a fresh cache), and the exact
    analysis alone (the best of three): what exact regions add to a cold build."""
    import tessel
    from tessel.bound import run_infer_bound
    from tessel.poly import plan
    from tessel.runtime.cache import clear_memory_cache

    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-bench-cache-")
    clear_memory_cache()
    s, args = case.tessel()
    t0 = time.perf_counter()
    tessel.build(s, args, exact=False)
    interval = time.perf_counter() - t0
    best = float("inf")
    for _ in range(3):
        s, args = case.tessel()
        ctx = run_infer_bound(s)
        t0 = time.perf_counter()
        plan(ctx)
        best = min(best, time.perf_counter() - t0)
    return interval, best


def _yardstick(case: Case, quick: bool):
    """What bounds ``case``'s rate, ready to call, and the work of a call: the FMA peak loop
    (flops) for a compute-bound kernel, tessel's copy kernel (``examples/fast_streams.copy``,
    bytes moved) for a bandwidth-bound one."""
    import tessel
    from examples.fast_streams import copy

    if case.unit == "GFLOP/s":
        return machine.fma_yardstick(case.threads)
    n = 1 << (20 if quick else 24)
    f = tessel.build(*copy(n))
    a = np.random.default_rng(1).standard_normal(n, "float32")
    out = np.empty_like(a)
    kw = {"num_threads": case.threads} if case.threads else {}
    return (lambda: f(a, out, **kw)), 2.0 * a.nbytes


def numpy_times(case: Case, repeat: int) -> list[float]:
    """NumPy's times for ``case`` (its inputs are made from the same seed as in run_case)."""
    inputs = case.make_inputs(np.random.default_rng(0))
    fn = case.numpy_fast(*inputs)
    warm_up(fn)
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def blas_threads(n: int) -> bool:
    """Set the thread count of NumPy's OpenBLAS in this process, so that NumPy on one thread is
    timed interleaved with the others; False where that cannot be done (then a process of its
    own, started with OPENBLAS_NUM_THREADS=1, times it)."""
    import glob

    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*")
    for path in glob.glob(libs):
        try:
            lib = ctypes.CDLL(path)  # already loaded by NumPy: the same library, not a second one
        except OSError:
            continue
        for sym in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                return True
    return False


def numpy_one_thread(index: int, quick: bool, repeat: int) -> list[float]:
    """NumPy on one thread: BLAS sizes its pool when it is loaded, so in a fresh process."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "benchmarks", "--numpy-case", str(index), "--repeat", str(repeat)]
    if quick:
        cmd.append("--quick")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _peers(case: Case, inputs: list[np.ndarray], row: Row, peers_on: dict[str, bool]) -> dict:
    """The installed peers' runners for ``case``; why the others have no number goes in row.notes."""
    runners = {}
    for peer in PEERS:
        if not peers_on[peer]:
            row.notes[peer] = "not installed"
            continue
        builder = case.peers.get(peer)
        if builder is None:
            row.notes[peer] = "not run" if case.threads else "no schedule"
            continue
        try:
            pr = builder(*inputs)
        except PeerUnavailable as e:  # e.g. no hand schedule of this kernel (its autoschedulers still run)
            row.notes[peer] = str(e)
            continue
        except Exception as e:  # a peer failing to build is a result, not a crash of the run
            row.notes[peer] = f"build failed: {type(e).__name__}"
            print(f"  {peer} failed to build {case.kernel} {case.size}: {str(e).splitlines()[0][:200]}",
                  file=sys.stderr)
            continue
        runners[peer] = (pr.run, pr.result)
        row.build_s[peer] = pr.build_s or None
    return runners


def _checked(case: Case, runners: dict, want: np.ndarray, row: Row) -> None:
    """Run each contender once (first-touch faults, thread pools, lazy JIT) and drop, with a
    note, every one that fails or disagrees with NumPy's reference."""
    for name, (fn, res) in list(runners.items()):
        try:
            fn()
            np.testing.assert_allclose(res(), want, rtol=case.rtol, atol=case.atol)
        except AssertionError as e:
            row.notes[name] = "WRONG RESULT"
            print(f"  {name} disagrees with NumPy on {case.kernel} {case.size}:\n{str(e)[:600]}", file=sys.stderr)
            del runners[name]
        except Exception as e:
            row.notes[name] = f"run failed: {type(e).__name__}"
            print(f"  {name} failed to run {case.kernel} {case.size}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
            del runners[name]


def run_case(case: Case, repeat: int, peers_on: dict[str, bool], index: int = 0, quick: bool = False,
             auto_budget: int | None = None, ms_trials: int = 0, auto_seconds: float | None = None) -> Row:
    rng = np.random.default_rng(0)
    inputs = case.make_inputs(rng)
    want = case.numpy(*inputs)
    row = Row(case.kernel, case.size, case.unit, str(case.threads or os.cpu_count()))
    fn, res, cold, cc, cached = _tessel(case, inputs)
    runners = {"tessel": (fn, res)}
    if auto_budget is not None and case.auto is not None:
        runners.update(_auto(case, inputs, row, auto_budget, auto_seconds))
    row.build_s["tessel"], row.cc_s, row.cpu_s, row.cached_s = cold, cc.seconds, cc.cpu, cached
    row.interval_build_s, row.analysis_s = _exact_cost(case)
    fast = case.numpy_fast(*inputs)
    in_process = case.threads != 1 or blas_threads(1)
    if case.threads == 1 and in_process:
        cores = os.cpu_count() or 1

        def one_thread(fast=fast):  # only this contender's BLAS calls run on one thread
            blas_threads(1)
            try:
                return fast()
            finally:
                blas_threads(cores)
        runners["numpy"] = (one_thread, one_thread)
    else:
        runners["numpy"] = (fast, fast)
    runners.update(_peers(case, inputs, row, peers_on))
    runners.update(auto_peers.contenders(case, inputs, row, peers_on, ms_trials))
    _checked(case, runners, want, row)
    if not in_process:  # timed in a process of its own, below
        runners.pop("numpy", None)
    yard_fn, yard_work = _yardstick(case, quick)
    times, yard_times = rounds(runners, repeat, yard_fn)
    if not in_process and "numpy" not in row.notes:
        times["numpy"] = numpy_one_thread(index, quick, repeat)
    if yard_times:
        bound = yard_work / float(np.median(yard_times)) / 1e9
        if case.unit == "GB/s":
            row.copy_rate = bound
        else:
            row.peak_rounds = bound
    if "numpy" in runners and "numpy" not in row.notes:  # tessel's kernel, each call after NumPy's
        times["between"] = between_calls(fn, runners["numpy"][0], repeat)
    for name, ts in times.items():
        t = float(np.median(ts))
        row.seconds[name] = t
        row.rate[name] = case.work / t / 1e9
    auto_peers.summarize(row)
    return row


def flag_peaks(rows: list[Row], m: machine.Machine) -> None:
    """Give each GFLOP/s row its peak; a contender above it means the peak was measured wrong."""
    for row in rows:
        if row.unit != "GFLOP/s":
            continue
        row.peak = m.fma_gflops_1t if row.threads == "1" else m.fma_gflops_all
        for name, rate in row.rate.items():
            if rate is not None and rate > row.peak:
                row.notes[f"{name}_peak"] = "ABOVE THE MEASURED PEAK"
                print(f"  {name} ran {row.kernel} {row.size} at {rate:.1f} GFLOP/s, above the measured FMA peak "
                      f"of {row.peak:.1f}: the peak measurement is wrong", file=sys.stderr)


# ---- output ------------------------------------------------------------------------------------
def _fmt(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _ratio(row: Row, other: str, base: str = "tessel") -> str:
    a, b = row.seconds.get(base), row.seconds.get(other)
    if a is None or b is None:
        return row.notes.get(other, "—")
    return f"{b / a:.2f}x"


def _of_bound(row: Row) -> str:
    """tessel's and auto's rates as shares of what bounds them, timed in the same rounds: the
    FMA peak loop (GFLOP/s; the run's peak where the rounds timed none) or the copy (GB/s)."""
    bound = (row.peak_rounds or row.peak) if row.unit == "GFLOP/s" else row.copy_rate
    shares = [f"{100 * row.rate[n] / bound:.0f}%" for n in ("tessel", "auto") if bound and row.rate.get(n)]
    return f"{' / '.join(shares)} of {bound:.1f}" if shares else "—"


def _cell(r: Row, name: str) -> str:
    if name not in r.rate:
        return r.notes.get(name, "—")
    flag = " **above peak**" if f"{name}_peak" in r.notes else ""
    return f"{_fmt(r.rate[name])}{flag}"


def _ms(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x * 1e3:.{digits}f}"


def _cpu(r: Row) -> str:
    return "—" if r.cpu_s is None else f"{r.cpu_s[0] * 1e3:.0f} + {r.cpu_s[1] * 1e3:.0f}"


def _tuning(r: Row) -> str:
    """Seconds each automatic contender took to choose its schedule and build it."""
    return " / ".join(_fmt(r.tune_s.get(n)) for n in ("auto", auto_peers.HALIDE_AUTO, auto_peers.METASCHEDULE))


def table(rows: list[Row], ms_trials: int = 0) -> str:
    head = ("| kernel | size | threads | unit | tessel | auto | NumPy | PyTorch | Halide | TVM | Halide auto "
            f"| MetaSchedule ({ms_trials} trials) | tessel between NumPy calls | between / alone | tessel vs NumPy "
            "| vs PyTorch | vs Halide | vs TVM | auto vs NumPy | auto vs tessel | auto vs Halide auto "
            "| auto vs MetaSchedule | tuning + build (s): auto / Halide auto / MetaSchedule "
            "| tessel / auto: % of peak or copy in its rounds | tessel cold build: total / cc (ms) "
            "| its CPU: tessel + cc (ms) | cached (ms) | cold with exact=False (ms) | exact analysis (ms) "
            "| Halide / TVM build (ms) |")
    out = [head, "|" + "---|" * 30]
    for r in rows:
        builds = " / ".join(_ms(r.build_s.get(p)) for p in ("halide", "tvm"))
        winner = f" ({r.halide_auto})" if r.halide_auto else ""
        out.append(
            f"| {r.kernel} | {r.size} | {r.threads} | {r.unit} | {_cell(r, 'tessel')} | {_cell(r, 'auto')} "
            f"| {_cell(r, 'numpy')} | {_cell(r, 'torch')} | {_cell(r, 'halide')} | {_cell(r, 'tvm')} "
            f"| {_cell(r, auto_peers.HALIDE_AUTO)}{winner} | {_cell(r, auto_peers.METASCHEDULE)} "
            f"| {_cell(r, 'between')} | {_ratio(r, 'tessel', 'between')} "
            f"| {_ratio(r, 'numpy')} | {_ratio(r, 'torch')} | {_ratio(r, 'halide')} | {_ratio(r, 'tvm')} "
            f"| {_ratio(r, 'numpy', 'auto')} | {_ratio(r, 'tessel', 'auto')} "
            f"| {_ratio(r, auto_peers.HALIDE_AUTO, 'auto')} | {_ratio(r, auto_peers.METASCHEDULE, 'auto')} "
            f"| {_tuning(r)} | {_of_bound(r)} "
            f"| {_ms(r.build_s.get('tessel'))} / {_ms(r.cc_s)} | {_cpu(r)} | {_ms(r.cached_s, 1)} "
            f"| {_ms(r.interval_build_s)} | {_ms(r.analysis_s, 1)} | {builds} |")
    return "\n".join(out)


def cold_build_text(rows: list[Row]) -> str:
    """The median of the kernels' cold builds and the slowest, in one line (wall time, and the
    CPU time of tessel and of the C compiler: on a loaded machine the CPU is what the build
    costs, the wall what the load added)."""
    done = [r for r in rows if r.build_s.get("tessel") is not None]
    if not done:
        return ""
    walls = [r.build_s["tessel"] for r in done]
    slow = max(done, key=lambda r: r.build_s["tessel"])
    text = (f"Cold builds of the {len(done)} kernels (tessel's hand schedules, from the schedule to the loaded "
            f"kernel, nothing cached): median {_ms(float(np.median(walls)))} ms, slowest {slow.kernel} {slow.size} "
            f"{_ms(slow.build_s['tessel'])} ms")
    cpus = [r.cpu_s for r in done if r.cpu_s is not None]
    if cpus:
        text += (f"; CPU medians: tessel {_ms(float(np.median([c[0] for c in cpus])))} ms, "
                 f"the C compiler {_ms(float(np.median([c[1] for c in cpus])))} ms")
    return text + "."


def exact_cost_text(rows: list[Row]) -> str:
    """What exact regions (on by default) add to the cold builds of the table, in one line."""
    done = [r for r in rows if r.interval_build_s is not None and r.analysis_s is not None]
    if not done:
        return ""
    cold = sum(r.build_s["tessel"] for r in done)
    interval = sum(r.interval_build_s for r in done)  # type: ignore[misc]
    analysis = sum(r.analysis_s for r in done)  # type: ignore[misc]
    return (f"Exact regions (isl, on by default): the analysis takes {analysis * 1e3:.1f} ms over the "
            f"{len(done)} kernels, {100 * analysis / interval:.2f}% of their cold builds with exact=False "
            f"({interval:.2f} s in all; {cold:.2f} s with it, both single builds, so the difference "
            "mixes the analysis with the compiler's run-to-run noise). A cached build does not run it.")


def machine_text(m: machine.Machine) -> str:
    l1, l2, l3 = (c >> 10 for c in m.caches)
    return "\n".join([
        f"- cores: {m.cores}; vector registers: {m.vector_registers} x {m.vector_bytes * 8} bits "
        f"({m.vector_bytes // 4} float32 lanes); caches: L1d {l1} KiB, L2 {l2} KiB, L3 {l3 >> 10} MiB",
        f"- FMA peak (measured, {m.fma_chains} independent chains): {m.fma_gflops_1t:.1f} GFLOP/s on 1 core, "
        f"{m.fma_gflops_all:.1f} on {m.cores}",
        f"- copy bandwidth (read + write, 2 x 64 MiB): tessel {m.copy_gbs_1t:.1f} GB/s on 1 core, "
        f"{m.copy_gbs_all:.1f} GB/s on {m.cores}; NumPy copyto {m.numpy_copy_gbs:.1f} GB/s",
    ])


def plot(rows: list[Row], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib)"
    labels = [f"{r.kernel}\n{r.size}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(rows)), 4.5))
    width = 0.12
    shown = (("tessel", "tab:blue"), ("auto", "tab:purple"), ("torch", "tab:red"), ("halide", "tab:orange"),
             (auto_peers.HALIDE_AUTO, "navajowhite"), ("tvm", "tab:green"), (auto_peers.METASCHEDULE, "lightgreen"))
    for k, (name, color) in enumerate(shown):
        vals = []
        for r in rows:
            a, b = r.seconds.get(name), r.seconds.get("numpy")
            vals.append(b / a if a and b else 0.0)
        ax.bar(x + (k - 3) * width, vals, width, label=name, color=color)
    ax.axhline(1.0, color="gray", lw=1, ls="--")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("speed relative to NumPy (higher is faster)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("tessel (hand and auto), PyTorch, Halide and TVM (hand and auto) against NumPy "
                 "(medians of interleaved blocks of runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"plot: {path}"


def _auto_budget(opts) -> int | None:
    """Trials of auto_schedule's search: as asked, else its default (0 with --quick); None: no auto column."""
    from tessel.autosched import DEFAULT_BUDGET

    if opts.no_auto:
        return None
    return opts.auto_budget if opts.auto_budget is not None else 0 if opts.quick else DEFAULT_BUDGET


def _ms_trials(opts) -> int:
    """MetaSchedule's trials: as asked, else as many as tessel's search (equal trials; 0, off, with --quick)."""
    from tessel.autosched import DEFAULT_BUDGET

    if opts.metaschedule_trials is not None:
        return max(0, opts.metaschedule_trials)
    return 0 if opts.quick else opts.auto_budget if opts.auto_budget is not None else DEFAULT_BUDGET


def _header(opts, repeat: int, auto_budget: int | None, ms_trials: int) -> list[str]:
    """The lines above the table: the command, what "auto" and the automatic peers ran with."""
    lines = ["# tessel benchmarks", "",
             f"`python -m benchmarks{' --quick' if opts.quick else ''}`, median of {repeat} timed runs per contender; "
             "rates count flops (matmul, conv2d) or bytes read + written (the rest).", ""]
    if auto_budget is not None:
        limit = f", stopped after {opts.auto_seconds:g} s" if opts.auto_seconds is not None else ""
        lines += [f"auto: `tessel.auto_schedule` of the bare definition (`benchmarks/definitions.py`), "
                  f"{auto_budget} trials of its search{limit}.", ""]
    once = f" (its one-time imports took {peers_tvm.IMPORT_S[0]:.0f} s, not counted)" if peers_tvm.IMPORT_S else ""
    lines += ["Halide auto: the fastest of Halide's autoschedulers (Mullapudi2016, Adams2019, Li2018; the "
              "winner in brackets, each one's figures in the JSON) on the Halide peer's definition. "
              f"MetaSchedule: TVM's search, {ms_trials} trials (0: off), on the TVM peer's definition{once}. "
              "Tuning + build: seconds from the definition to the compiled kernel.", ""]
    return lines


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes and few runs: a smoke test")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per contender (default 30, quick 6)")
    ap.add_argument("--only", default="", help="comma-separated kernel names (matmul, blur, conv2d, softmax, ...)")
    ap.add_argument("--out", default="results", help="directory for the table, JSON and plot")
    ap.add_argument("--no-machine", action="store_true",
                    help="skip measuring the machine's best FMA peak and copy bandwidth at the start and end "
                         "(each kernel's yardstick is still timed in its rounds)")
    ap.add_argument("--auto-budget", type=int, default=None,
                    help="trials of tessel.auto_schedule's search (default: its own; --quick: 0, the rules alone)")
    ap.add_argument("--no-auto", action="store_true", help="leave tessel.auto_schedule out")
    ap.add_argument("--auto-seconds", type=float, default=None,
                    help="a wall-clock limit (s) on tessel.auto_schedule's search per kernel (default: none)")
    ap.add_argument("--metaschedule-trials", type=int, default=None,
                    help="trials of TVM MetaSchedule per kernel (default: as many as --auto-budget; "
                         "--quick: 0, off)")
    ap.add_argument("--share-blas-threads", action="store_true",
                    help="run NumPy's OpenBLAS jobs on tessel's OpenMP pool (tessel.runtime.share_blas_threads)")
    ap.add_argument("--numpy-case", type=int, default=None, help=argparse.SUPPRESS)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    opts = ap.parse_args(argv)
    if opts.auto_seconds is not None and not opts.auto_seconds > 0:  # NaN too
        ap.error(f"--auto-seconds: give the seconds as a number above zero; got {opts.auto_seconds}")
    repeat = opts.repeat or (6 if opts.quick else 30)
    if opts.share_blas_threads:
        from tessel.runtime import share_blas_threads

        share_blas_threads()
    if opts.numpy_case is not None:
        print(json.dumps(numpy_times(cases(opts.quick)[opts.numpy_case], repeat)))
        return 0
    from . import peers

    # every contender gets every core: TVM's pool would otherwise count physical cores per
    # socket (1 on some VMs), and Halide's is sized here the same way for symmetry
    for var in ("TVM_NUM_THREADS", "HL_NUM_THREADS"):
        os.environ.setdefault(var, str(os.cpu_count() or 1))
    # TVM's idle workers yield-spin for ~300k rounds (a good fraction of a second) after each call,
    # which on a small machine steals the cores from whoever runs next; they sleep at once with 0
    # (OpenMP's and Halide's workers stop spinning within milliseconds; settle() waits for every pool)
    os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
    peers_on = {p: peers.available(p) for p in PEERS}
    # cold builds: a cache directory of our own, so that nothing is found from earlier runs
    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-bench-cache-")
    selected = [(k, c) for k, c in enumerate(cases(opts.quick))
                if not opts.only or any(w.strip() and c.kernel.startswith(w.strip()) for w in opts.only.split(","))]
    auto_budget, ms_trials = _auto_budget(opts), _ms_trials(opts)
    print("the machine: FMA peak and copy bandwidth ...", file=sys.stderr, flush=True)
    m = None if opts.no_machine else machine.measure(opts.quick)
    rows = []
    for index, case in selected:
        print(f"{case.kernel} {case.size} ...", file=sys.stderr, flush=True)
        rows.append(run_case(case, repeat, peers_on, index, opts.quick, auto_budget, ms_trials, opts.auto_seconds))
    if m is not None:  # measured again at the end: the peak is the best the machine showed
        m = machine.best_of(m, machine.measure(opts.quick, peak_only=True))
        flag_peaks(rows, m)
    out_dir = Path(opts.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = table(rows, ms_trials)
    missing = [p for p, ok in peers_on.items() if not ok]
    lines = _header(opts, repeat, auto_budget, ms_trials)
    if m is not None:
        lines += ["## machine", "", machine_text(m), ""]
    if missing:
        lines += [f"Not installed: {', '.join(missing)} (`pip install .[peers]`).", ""]
    lines += ["## results", "", text, "", cold_build_text(rows), "", exact_cost_text(rows), ""]
    (out_dir / "benchmarks.md").write_text("\n".join(lines))
    (out_dir / "benchmarks.json").write_text(json.dumps(
        {"machine": asdict(m) if m else None, "rows": [asdict(r) for r in rows], "repeat": repeat,
         "auto_budget": auto_budget, "auto_seconds": opts.auto_seconds, "metaschedule_trials": ms_trials,
         "metaschedule_import_s": peers_tvm.IMPORT_S[0] if peers_tvm.IMPORT_S else None}, indent=1))
    print("\n".join(lines))
    print(plot(rows, out_dir / "benchmarks.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
