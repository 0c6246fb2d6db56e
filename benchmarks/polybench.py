"""``python -m benchmarks.polybench``: the PolyBench/C 4.2 kernels of ``examples/polybench``
against the same loops in plain C, in memory and in time, one table.

    python -m benchmarks.polybench [--size MINI] [--scale N] [--kernels gemm,lu]
                                   [--repeat 9] [--threads 1,2]

Per kernel, one row: the bytes tessel's kernel needs (the distinct arrays it is called with and
the temporaries it allocates, ``examples.polybench.footprint``) beside PolyBench's own arrays;
tessel's time at each thread count; the time of the kernel's ``c_loops`` (PolyBench's loops as
written, one thread) compiled ``gcc -O3 -march=native``; tessel's speedup over it (gcc's time
over tessel's: above 1, tessel is faster); and, where ``clang -mllvm -polly`` builds and runs a
loop nest on this machine, the same C through Polly (``-polly-parallel`` on OpenMP threads at
each thread count where that works too), with tessel's speedup over it. The last rows are the
geometric means of the ratios over the stencils and over every kernel with a number.

Every contender computes on the same arrays: PolyBench's ``init_array`` (``kernel.init``),
copied back into the arrays before every call, outside the timed region, since the kernels
update in place (an LU run twice on its own output is another computation, and its values
drift towards overflow and denormals). Before anything is timed, each contender's result is
compared with the NumPy transcription (``kernel.reference``) on every array the kernel writes;
one that differs, or fails to build, has a note instead of a time ("C wrong"): the ``c_loops``
strings were otherwise only compiled, never run, by their authors.

The contenders take turns in rounds of up to three calls (``benchmarks.timing``'s reasons:
load on the shared machine then hits them alike), each block started on idle cores
(``timing.settle``: tessel's OpenMP pool spins after its calls) and after untimed calls for
50 ms (``warm_up``); the time is the median of ``--repeat`` calls. PolyBench's MINI sizes run
in microseconds, where a call's overhead (tessel's argument checks, ctypes) is part of the
time: ``--scale N`` multiplies every size of the dataset by N so that the loops dominate.
The C is compiled into a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tessel.tune.runner import warm_up

from .timing import BLOCK, settle

if TYPE_CHECKING:
    from examples.polybench import Kernel

# the C type of each dtype a PolyBench array has here
C_TYPES = {"float64": "double", "float32": "float", "int64": "long long", "int32": "int", "int16": "short",
           "int8": "signed char", "uint8": "unsigned char"}
FLAGS = ("-O3", "-march=native", "-shared", "-fPIC")
POLLY_FLAGS = ("-mllvm", "-polly")
POLLY_PARALLEL = ("-mllvm", "-polly-parallel", "-fopenmp")
STENCILS = "stencils"  # the category of the six time-iterated stencils


@dataclass(frozen=True)
class Compiler:
    """How one C contender is built: ``argv`` up to the source file; ``threaded``: its code
    runs parallel loops on OpenMP threads (Polly's ``-polly-parallel``), so it is timed at
    each thread count and not once."""

    name: str
    argv: tuple[str, ...]
    threaded: bool = False


GCC = Compiler("gcc", ("gcc", *FLAGS))


@dataclass
class Row:
    kernel: str
    category: str
    size: str
    footprint: tuple[int, int] | None = None                          # bytes: tessel's, PolyBench's
    seconds: dict[str, float] = field(default_factory=dict)           # median per contender
    notes: dict[str, str] = field(default_factory=dict)               # why a contender has no time
    flags: dict[str, str] = field(default_factory=dict)               # timed, but differs at this size only

    @property
    def failed(self) -> bool:
        """Whether a contender failed to build or run, or computed wrong (not: had no Polly)."""
        return any(note != "n/a" for note in self.notes.values())


# ---- the plain C -------------------------------------------------------------------------------
def _c_param(name: str, value: np.ndarray | float | int) -> str:
    if isinstance(value, np.ndarray):
        ctype = C_TYPES[value.dtype.name]
        if value.ndim <= 1:
            return f"{ctype} *restrict {name}"
        return f"{ctype} (*restrict {name})" + "".join(f"[{d}]" for d in value.shape[1:])
    return f"{'int' if isinstance(value, (int, np.integer)) else 'double'} {name}"


def translation_unit(c_loops: str, sizes: Mapping[str, int], start: Mapping[str, np.ndarray | float]) -> str:
    """C for ``c_loops`` at ``sizes``: ``void kernel(...)`` over the arrays and scalars of
    ``start`` (PolyBench's init, in its order), each array a pointer to its rows so that the
    body's ``A[i][j]`` reads as PolyBench's does, and ``set_threads(n)`` for an OpenMP build
    (a no-op otherwise: gcc's build is sequential as written)."""
    params = ", ".join(_c_param(n, v) for n, v in start.items())
    defines = "\n".join(f"#define {k} {int(v)}" for k, v in sizes.items())
    return f"""#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
{defines}

void kernel({params}) {{{c_loops}
}}

void set_threads(int n) {{
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}}
"""


class CompileError(Exception):
    pass


def compile_c(source: str, compiler: Compiler, directory: str, stem: str) -> ctypes.CDLL:
    """Build ``source`` into a new folder of ``directory`` (a temporary one: nothing is written
    near the user's files) and load it. A new path every time: ``dlopen`` of a path it has
    loaded before hands back the library already loaded, another size's loops."""
    folder = tempfile.mkdtemp(prefix=f"{stem}-", dir=directory)
    src, lib = Path(folder, f"{stem}.c"), Path(folder, f"{stem}.so")
    src.write_text(source)
    res = subprocess.run([*compiler.argv, "-o", str(lib), str(src), "-lm"], capture_output=True, text=True)
    if res.returncode != 0:
        raise CompileError(res.stderr.strip() or f"{compiler.argv[0]} exited with {res.returncode}")
    return ctypes.CDLL(str(lib))


def find_polly(directory: str) -> tuple[Compiler | None, str]:
    """clang with Polly, if it builds a loop nest into a shared object that runs here, parallel
    (``-polly-parallel``, OpenMP) if that works too; otherwise None and why not. Asked once per
    run: an installed clang without Polly rejects ``-polly`` as an unknown option."""
    # plain clang, else the newest versioned one (Debian installs clang-14 and the like)
    clang = shutil.which("clang") or next(filter(None, (shutil.which(f"clang-{v}") for v in range(30, 10, -1))), None)
    if clang is None:
        return None, "no clang"
    a = np.arange(64.0).reshape(8, 8)
    probe = translation_unit("\n  for (int i = 1; i < N; i++)\n    for (int j = 0; j < N; j++) "
                             "A[i][j] += A[i-1][j];", {"N": 8}, {"A": a})
    why = ""
    for extra, threaded in ((POLLY_PARALLEL, True), ((), False)):
        polly = Compiler("Polly", (clang, *FLAGS, *POLLY_FLAGS, *extra), threaded)
        try:
            lib = compile_c(probe, polly, directory, f"polly_probe{len(extra)}")
            got = a.copy()
            lib.kernel(got.ctypes.data_as(ctypes.c_void_p))
        except (CompileError, OSError) as e:
            why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            continue
        if np.array_equal(got, np.cumsum(a, axis=0)):
            return polly, "parallel" if threaded else "sequential (-polly-parallel does not build)"
        why = "computes the probe wrong"
    return None, f"clang without Polly ({why})"


def gcc_version() -> str:
    try:
        return subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "not found"


# ---- one kernel --------------------------------------------------------------------------------
Runner = tuple[Callable[[], object], Callable[[], object]]  # (restore the arrays, call)


def _differs(got: Mapping[str, np.ndarray], want: Mapping, names: Sequence[str], tol: float) -> str:
    """'' if every array of ``names`` agrees, else where the first one differs."""
    for name in names:
        g, w = np.asarray(got[name]), np.asarray(want[name])
        if not np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True):
            bad = ~np.isclose(g, w, rtol=tol, atol=tol, equal_nan=True)
            at = tuple(int(x) for x in np.argwhere(bad)[0])
            return (f"{name} differs at {int(bad.sum())} of {bad.size} elements, first {at}: "
                    f"{g[at]!r} instead of {w[at]!r}")
    return ""


def _c_runner(lib: ctypes.CDLL, work: Mapping[str, np.ndarray | float]) -> Callable[[], object]:
    fn = lib.kernel
    fn.restype = None
    args: list[object] = []
    for v in work.values():
        if isinstance(v, np.ndarray):
            args.append(ctypes.c_void_p(v.ctypes.data))
        elif isinstance(v, (int, np.integer)):
            args.append(ctypes.c_int(int(v)))
        else:
            args.append(ctypes.c_double(float(v)))
    return lambda: fn(*args)


def _say(row: Row, who: str, note: str, detail: str = "") -> None:
    row.notes[who] = note
    print(f"  {row.kernel} {row.size}: {who}: {note}{': ' + detail if detail else ''}", file=sys.stderr)


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0][:200] if str(e) else ""


@dataclass
class _Built:
    """Every contender of one kernel at one size, ready to call on ``work``."""

    work: dict[str, np.ndarray | float]
    outputs: list[str]                                          # the arrays the kernel writes
    calls: dict[str, Callable[[], object]] = field(default_factory=dict)
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # contender: (note, detail)

    def run(self, who: str, restore: Callable[[], object], want: Mapping, tol: float) -> str:
        """Call ``who`` once on freshly restored arrays: '' if it computes ``want``, else what differs."""
        restore()
        try:
            self.calls[who]()
        except Exception as e:  # a contender failing to run is a result, not the end of the table
            return f"run failed: {type(e).__name__}: {_first_line(e)}"
        return _differs(self.work, want, self.outputs, tol)


def _build(kernel: Kernel, sizes: Mapping[str, int], start: Mapping[str, np.ndarray | float], threads: Sequence[int],
           polly: Compiler | None, directory: str) -> _Built:
    """tessel's kernel (called at each thread count), gcc's C and Polly's at ``sizes``, over
    C-ordered copies of ``start``."""
    import tessel

    work = {k: (np.array(v, order="C", copy=True) if isinstance(v, np.ndarray) else v) for k, v in start.items()}
    built = _Built(work, [k for k, v in start.items() if isinstance(v, np.ndarray)])
    try:
        prog = kernel.define(sizes)
        built.outputs = list(prog.outputs)
        f = tessel.build(prog.schedule, list(prog.args), name=kernel.name.replace("-", "_"))
    except Exception as e:
        for t in threads:
            built.failed[f"tessel {t}"] = (f"build failed: {type(e).__name__}", _first_line(e))
    else:
        args = [work[n] for n in prog.names]
        for t in threads:
            built.calls[f"tessel {t}"] = lambda t=t: f(*args, num_threads=t)
    source = translation_unit(kernel.c_loops, sizes, start)
    for cc in [GCC] + ([polly] if polly is not None else []):
        who = [cc.name] if cc is GCC else [f"{cc.name} {t}" for t in threads]
        try:
            lib = compile_c(source, cc, directory, kernel.name.replace("-", "_"))
        except CompileError as e:
            for w in who:
                built.failed[w] = ("C does not build", str(e)[:2000])
            continue
        call = _c_runner(lib, work)
        if cc is GCC:
            built.calls[cc.name] = call
            continue
        for t, w in zip(threads, who):
            if not cc.threaded and t != 1:
                built.failed[w] = ("n/a", "")  # sequential Polly: its one-thread time is its number
                continue

            def on(t: int = t, lib: ctypes.CDLL = lib, call: Callable[[], object] = call) -> None:
                lib.set_threads(t)  # the OpenMP count is the calling thread's: set it per call
                call()
            built.calls[w] = on
    return built


def _restorer(start: Mapping[str, np.ndarray | float], work: Mapping[str, np.ndarray | float]) -> Callable[[], None]:
    def restore() -> None:
        for k, v in start.items():
            if isinstance(v, np.ndarray):
                np.copyto(work[k], v)  # type: ignore[arg-type]
    return restore


def _reference(kernel: Kernel, sizes: Mapping[str, int], start: Mapping[str, np.ndarray | float]) -> dict:
    want = {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in start.items()}
    kernel.reference(sizes, want)
    return want


def _right_at(kernel: Kernel, sizes: Mapping[str, int], threads: Sequence[int], polly: Compiler | None,
              directory: str) -> set[str]:
    """The contenders that compute the reference's values at ``sizes``."""
    start = kernel.init(sizes)
    built = _build(kernel, sizes, start, threads, polly, directory)
    want, restore = _reference(kernel, sizes, start), _restorer(start, built.work)
    return {who for who in built.calls if not built.run(who, restore, want, kernel.tolerance)}


def measure(kernel: Kernel, label: str, sizes: Mapping[str, int], repeat: int, threads: Sequence[int],
            polly: Compiler | None, directory: str, own: Mapping[str, int] | None = None) -> Row:
    """One row: ``kernel`` at ``sizes`` (named ``label``), every contender checked against the
    reference, then timed. ``own``: the kernel's own dataset when ``sizes`` scales it. A
    contender that differs from the reference at ``sizes`` but not at ``own`` is timed, its
    time marked "!": the kernels' authors checked them at sizes where rounding stays small,
    and a scaled size may not be one (gramschmidt's scaled sizes are rank-deficient: its noise
    columns follow gcc's multiply-add contraction under ``-march=native``, and tessel's, not
    NumPy's rounding, as its notes say of PolyBench's MINI)."""
    from examples.polybench import footprint

    row = Row(kernel.name, kernel.category, label)
    start = kernel.init(sizes)
    built = _build(kernel, sizes, start, threads, polly, directory)
    for who, (note, detail) in built.failed.items():
        if note == "n/a":
            row.notes[who] = note
        else:
            _say(row, who, note, detail)
    try:
        sized = replace(kernel, sizes={**kernel.sizes, label: dict(sizes)})
        row.footprint = footprint(sized, label)
    except Exception as e:
        print(f"  {kernel.name} {label}: no footprint: {type(e).__name__}: {_first_line(e)}", file=sys.stderr)
    want, restore = _reference(kernel, sizes, start), _restorer(start, built.work)
    runners: dict[str, Runner] = {}
    right_at_own: set[str] | None = None
    for who, call in built.calls.items():
        problem = built.run(who, restore, want, kernel.tolerance)
        if problem and not problem.startswith("run failed") and own is not None:
            if right_at_own is None:
                right_at_own = _right_at(kernel, own, threads, polly, directory)
            if who in right_at_own:
                row.flags[who] = problem
                print(f"  {row.kernel} {row.size}: {who}: differs from the reference at this size only (timed, "
                      f"marked !): {problem}", file=sys.stderr)
                problem = ""
        if problem:
            _say(row, who, "run failed" if problem.startswith("run failed") else "wrong", problem)
            continue
        runners[who] = (restore, call)
    for who, ts in interleaved(runners, repeat).items():
        row.seconds[who] = float(np.median(ts))
    return row


def interleaved(runners: Mapping[str, Runner], repeat: int) -> dict[str, list[float]]:
    """``repeat`` timed calls of each contender, in rounds of up to :data:`timing.BLOCK` calls,
    the order reversed each round (:func:`benchmarks.timing.rounds`, with the arrays restored
    before every call, outside the timed region); each block starts on quiet cores, after
    untimed calls for 50 ms."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    order = list(runners)
    n_rounds = max(1, -(-repeat // BLOCK))
    left = dict.fromkeys(order, repeat)
    for rnd in range(n_rounds):
        for name in order if rnd % 2 == 0 else reversed(order):
            restore, call = runners[name]
            settle()
            warm_up(lambda restore=restore, call=call: (restore(), call()))
            for _ in range(min(left[name], -(-repeat // n_rounds))):
                restore()
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
                left[name] -= 1
    return times


# ---- the table ---------------------------------------------------------------------------------
def _columns(threads: Sequence[int], polly: bool) -> list[str]:
    cols = ["kernel", "size", "tessel B", "PolyBench B", "tessel/PolyBench B"]
    cols += [f"tessel {t}t us" for t in threads] + ["gcc -O3 1t us"]
    cols += [f"speedup vs gcc {t}t" for t in threads]
    if polly:
        cols += [f"Polly {t}t us" for t in threads] + [f"speedup vs Polly {t}t" for t in threads]
    else:
        cols += ["Polly"]
    return cols


def _us(row: Row, who: str) -> str:
    if who in row.seconds:
        return f"{row.seconds[who] * 1e6:.1f}" + ("!" if who in row.flags else "")
    return row.notes.get(who, "—")


def _speedup(row: Row, base: str, who: str) -> float | None:
    a, b = row.seconds.get(who), row.seconds.get(base)
    return b / a if a and b else None


def _ratios(row: Row, threads: Sequence[int], polly: bool) -> list[float | None]:
    """The row's ratio columns, in the table's order: footprint, speedups over gcc, over Polly."""
    mem = row.footprint[0] / row.footprint[1] if row.footprint and row.footprint[1] else None
    out = [mem] + [_speedup(row, "gcc", f"tessel {t}") for t in threads]
    if polly:
        out += [_speedup(row, f"Polly {t}", f"tessel {t}") for t in threads]
    return out


def _x(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.4f}"  # a 2-thread time-sliced 0.0016 is not 0.00


def _geomean(values: list[float | None]) -> str:
    got = [v for v in values if v is not None and v > 0]
    if not got:
        return "—"
    mean = math.exp(sum(math.log(v) for v in got) / len(got))
    return f"{mean:.2f}" + ("" if len(got) == len(values) else f" ({len(got)} of {len(values)})")


def table(rows: Sequence[Row], threads: Sequence[int], polly: Compiler | None) -> str:
    """The markdown table: a row per kernel, then the geometric means of the ratio columns
    (each over the kernels with a number in it, counted where some have none)."""
    cols = _columns(threads, polly is not None)
    body: list[list[str]] = []
    for r in rows:
        mem, *speed = _ratios(r, threads, polly is not None)
        fp = r.footprint or (None, None)
        cells = [r.kernel, r.size, "—" if fp[0] is None else str(fp[0]), "—" if fp[1] is None else str(fp[1]),
                 _x(mem), *(_us(r, f"tessel {t}") for t in threads), _us(r, "gcc"),
                 *(_x(v) for v in speed[:len(threads)])]
        if polly is not None:
            cells += [_us(r, f"Polly {t}") for t in threads] + [_x(v) for v in speed[len(threads):]]
        else:
            cells.append("n/a")
        body.append(cells)
    for title, chosen in ((f"geomean {STENCILS}", [r for r in rows if r.category == STENCILS]), ("geomean all", rows)):
        n_ratios = 1 + len(threads) * (2 if polly is not None else 1)
        if not chosen:
            means = ["—"] * n_ratios
        else:
            per = [_ratios(r, threads, polly is not None) for r in chosen]
            means = [_geomean([p[k] for p in per]) for k in range(n_ratios)]
        cells = [f"{title} ({len(chosen)})", "", "", "", means[0], *([""] * len(threads)), "",
                 *means[1:1 + len(threads)]]
        cells += ([""] * len(threads) + means[1 + len(threads):]) if polly is not None else [""]
        body.append(cells)
    widths = [max(len(c), *(len(b[k]) for b in body)) for k, c in enumerate(cols)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, body)])


# ---- the command -------------------------------------------------------------------------------
def _threads(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"give thread counts as whole numbers above zero, e.g. 1,2 (got {text!r})")
    return out


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"give a whole number above zero (got {text!r})")
    return n


def main(argv: Sequence[str] | None = None, catalog: Sequence[Kernel] | None = None) -> int:
    """Print the table; 1 if a contender failed to build or computed wrong. ``catalog``: the
    kernels to choose from (``examples.polybench.KERNELS`` unless given: a test's own)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.polybench", description=__doc__.splitlines()[0].replace("``", ""))
    ap.add_argument("--size", default=None,
                    help="a dataset every chosen kernel has (MINI, ODD, ...); default: each kernel's first")
    ap.add_argument("--scale", type=_positive, default=1, help="multiply every size of the dataset by N")
    ap.add_argument("--kernels", default=None, help="comma-separated kernel names (default: all)")
    ap.add_argument("--repeat", type=_positive, default=9, help="timed calls per contender (the median is shown)")
    ap.add_argument("--threads", type=_threads, default=[1, 2], help="tessel's thread counts (default 1,2)")
    opts = ap.parse_args(argv)
    if catalog is None:
        from examples.polybench import KERNELS as catalog
    by_name = {k.name: k for k in catalog}
    if opts.kernels:
        names = [n.strip() for n in opts.kernels.split(",") if n.strip()]
        unknown = [n for n in names if n not in by_name]
        if unknown:
            ap.error(f"no kernel {', '.join(unknown)}; there are: {', '.join(by_name)}")
        chosen = [by_name[n] for n in names]
    else:
        chosen = list(catalog)
    if opts.size is not None:
        lacking = [k.name for k in chosen if opts.size not in k.sizes]
        if lacking:
            ap.error(f"--size {opts.size}: not a dataset of {', '.join(lacking)}")
    directory = tempfile.mkdtemp(prefix="tessel-polybench-")
    try:
        polly, polly_note = find_polly(directory)
        dataset = opts.size or "each kernel's first"
        print(f"PolyBench/C 4.2 kernels (examples/polybench): dataset {dataset}"
              f"{f' x{opts.scale}' if opts.scale > 1 else ''}, median of {opts.repeat} calls, tessel on "
              f"{','.join(map(str, opts.threads))} threads; gcc {gcc_version()} -O3 -march=native on 1 thread; "
              f"Polly: {polly_note if polly else 'n/a (' + polly_note + ')'}; "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
        if os.getloadavg()[0] + max(opts.threads) > (os.cpu_count() or 1) + 0.5:
            print("  (more runnable threads than cores: a time at several threads is then mostly the wait of "
                  "OpenMP's barriers for a time slice, not the kernel's)", flush=True)
        rows = []
        for k in chosen:
            size = opts.size or next(iter(k.sizes))
            sizes = {n: v * opts.scale for n, v in k.sizes[size].items()}
            label = size if opts.scale == 1 else f"{size}x{opts.scale}"
            own = None if opts.scale == 1 else k.sizes[size]
            rows.append(measure(k, label, sizes, opts.repeat, opts.threads, polly, directory, own))
            print(f"  {k.name} done", file=sys.stderr, flush=True)
        print(table(rows, opts.threads, polly))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("speedup: the C contender's time over tessel's (above 1: tessel is faster); gcc's C runs on one "
          "thread, as written; B: bytes of arrays (tessel: its arguments and temporaries)")
    if any(r.flags for r in rows):
        print("!: differs from the NumPy reference at this size, not at the kernel's own dataset (rounding "
              "an ill-conditioned size amplifies, or a fault that only a large size shows: stderr says where)")
    return 1 if any(r.failed for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
