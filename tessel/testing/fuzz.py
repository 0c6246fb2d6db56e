"""The cross-feature differential fuzzer: random programs x random schedules, both targets vs NumPy.

``python -m tessel.testing.fuzz --cases 10000 --seed 1`` draws 10,000 programs (the pipelines
of :mod:`.fuzz_programs` with :mod:`.fuzz_features`' stencils, reductions with ``init=`` and
``where=``, recurrences, scans, in-place stages and symbolic sizes with ``s.assume``) and on each
a random schedule mixing TE primitives, compute_at by position in every mode, Tiramisu's
commands and the storage commands (:mod:`.fuzz_schedules`). Each is lowered, built for the
python and C targets and run on random data (never zeros) against NumPy, at a second size where
the sizes are symbolic. Every refusal that proposes a fix has the fix applied, and the result is
checked like any other.

It prints the counts: ``accepted`` (right values on both targets), ``refused`` (the schedule
refused as a whole, with no fix), ``fix-applied`` (cases where at least one fix was applied),
``wrong`` (a value differs from NumPy's), ``crashed`` (any other exception, or the process
died) and ``sanitizer`` (with ``--sanitize``: the C built with AddressSanitizer and
UndefinedBehaviorSanitizer, ``$TESSEL_SANITIZE``, reported an error). Each failure's program
is appended to ``--findings`` (default ``fuzz_findings.txt``). A case is named by its seed and
index: ``--seed 1 --case 417`` runs that one alone and prints its program.

The cases run in ``--jobs`` worker processes (default: the cores this process may use), each
a ``--worker`` of this module printing one JSON line per case, so a kernel that kills its
process costs only that case: the parent records it and starts the worker again after it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import selectors
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable

import tessel

from ..errors import LowerError, ScheduleError
from . import choices as st
from .choices import random_draw
from .fuzz_programs import Program, build_pipeline
from .fuzz_schedules import apply_primitive
from .fuzz_sharing import apply_sharing_primitive, build_sharing

STEPS = 14  # at most this many schedule primitives per example
MAX_FIXES = 4  # fixes applied to one schedule refused at lowering before it counts as refused


# LowerErrors that refuse a schedule the commands made illegal, saying what to do: commands over
# indices isl cannot describe, over stages placed by position or inlined, a recurrence's
# definition moved inside another stage. Any other LowerError of a schedule tessel accepted
# step by step is a failure.
REFUSALS = ("polyhedral model", "orders need", "with commands", "commands (after", "have no loops to act on",
            "must run whole", "steps of a scan must run in order", "a scan runs one step per iteration")


class FuzzFailure(AssertionError):
    """A wrong value (``kind`` "wrong") or any other failure ("crashed") of one example; the
    message holds the program that reproduces it."""

    def __init__(self, kind: str, message: str, program: str):
        super().__init__(message)
        self.kind, self.program = kind, program


def _tail(draw, prog: Program) -> list[str]:
    """The lines that check the kernel: against NumPy, then again at other sizes."""
    args = ", ".join([*prog.inputs, *prog.outputs])
    refs = ", ".join(prog.refs[t] for t in prog.inputs)
    want = ", ".join(prog.refs[t] for t in prog.outputs)
    tol = "rtol=0, atol=0" if prog.dtype.startswith("int") else "rtol=1e-4, atol=1e-4"
    upd = {prog.inputs.index(t): v for t, v in prog.updated.items()}
    extra = f", updated={{{', '.join(f'{k}: {v}' for k, v in upd.items())}}}" if upd else ""
    line = f"check(s, [{args}], [{refs}], [{want}], {tol}{extra})"
    tail = [f"kernels = {line}"]
    line = line[:-1] + ", kernels=kernels)"  # at other sizes: the same kernels
    if prog.symbolic:  # the same kernel at other sizes, larger (so every stage keeps a shape)
        if prog.sizes2 is None:
            n2 = prog.ns["N"] + draw(st.sampled_from([0, 1, 4, 16])) if "N" in prog.symbolic else prog.ns["N"]
            m2 = prog.ns["M"] + draw(st.sampled_from([0, 1, 4, 16])) if "M" in prog.symbolic else prog.ns["M"]
            prog.sizes2 = (n2, m2)
        tail += [f"N, M = {prog.sizes2[0]}, {prog.sizes2[1]}", *prog.data_lines[1:], line]
    return tail


def _lower_or_fix(prog: Program, stats: dict, commands: bool, fix: bool) -> bool:
    """Lower the schedule; with ``fix``, a refusal with a fix gets the fix and is lowered again.
    False when the schedule is refused as a whole."""
    args = [prog.ns[t] for t in [*prog.inputs, *prog.outputs]]
    for _ in range(MAX_FIXES):
        try:
            tessel.lower(prog.ns["s"], args)
            return True
        except ScheduleError as err:
            if not (fix and err.fix):
                return False
            prog.apply_fix(err)
            stats["fixed"] = stats.get("fixed", 0) + 1
        except LowerError as e:  # commands over indices isl cannot describe, or over stages
            if commands and any(w in str(e) for w in REFUSALS):
                return False
            raise
    return False


def run_example(draw, stats: dict, stages: tuple[int, int], positions: bool = False, commands: bool = False,
                *, features: bool = False, storage: bool = False, steps: int = STEPS,
                note: Callable[[str], None] | None = None, sharing: bool = False) -> None:
    """Draw one program and schedule, lower, build and check it; count the outcome in ``stats``
    ("accepted" or "rejected"; "refused" and "fixed" primitives); raise :class:`FuzzFailure`
    on a wrong value or any other failure. ``sharing``: the loop-sharing path instead
    (:mod:`.fuzz_sharing`: nvFuser-shaped programs, position primitives and compute_with)."""
    prog = Program()
    prog.stats = stats
    if sharing:
        build_sharing(draw, prog)
    else:
        build_pipeline(draw, prog, stages, features=features, side=positions)
    for _ in range(draw(st.integers(1, steps))):
        try:
            if sharing:
                apply_sharing_primitive(draw, prog)
                continue
            apply_primitive(draw, prog, positions, stats.setdefault("commands", {}) if commands else None, storage)
        except ScheduleError:
            raise
        except Exception as e:  # a primitive failing otherwise is a bug: show the program so far
            raise FuzzFailure("crashed", f"{type(e).__name__}: {e}\n---- program ----\n{prog.source()}\n"
                              f"---- traceback ----\n{traceback.format_exc()}", prog.source()) from None
    tail = _tail(draw, prog)
    try:
        if not _lower_or_fix(prog, stats, commands, fix=features):
            stats["rejected"] = stats.get("rejected", 0) + 1
            return
        if note:
            note(prog.source() + "\n" + "\n".join(tail))
        stats["accepted"] = stats.get("accepted", 0) + 1
        for ln in tail:
            exec(ln, prog.ns)
    except Exception as e:
        text = prog.source() + "\n" + "\n".join(tail)
        wrong = isinstance(e, AssertionError) and ("Not equal to tolerance" in str(e) or "Arrays are not" in str(e))
        raise FuzzFailure("wrong" if wrong else "crashed", f"{type(e).__name__}: {e}\n---- program ----\n{text}\n"
                          f"---- traceback ----\n{traceback.format_exc()}", text) from None


# ---- the script --------------------------------------------------------------------------
def run_case(seed: int, index: int, stages: tuple[int, int] = (1, 3), sharing: bool = False) -> dict:
    """Case ``index`` of ``seed``: its outcome and, for a failure, the message and program.
    ``sharing``: the loop-sharing path, drawn from seeds of its own."""
    stats: dict = {}
    draw = random_draw(random.Random(f"tessel-fuzz{'-sharing' if sharing else ''}:{seed}:{index}"))
    t0, cpu0 = time.perf_counter(), _cpu()
    out: dict = {"case": index}
    try:
        run_example(draw, stats, stages, positions=True, commands=True, features=True, storage=True, sharing=sharing)
        out["outcome"] = "accepted" if stats.get("accepted") else "refused"
    except FuzzFailure as f:
        head, _, rest = str(f).partition("\n---- program")
        frames = [ln for ln in rest.partition("---- traceback ----")[2].splitlines() if ln.strip().startswith("File")]
        out.update(outcome=f.kind, message=(head[:2000] + "\n" + "\n".join(frames[-4:])).strip(), program=f.program)
    except ScheduleError as e:  # a primitive's refusal escaped the generator: a generator bug
        out.update(outcome="crashed", message=f"ScheduleError: {e}"[:2000], program="")
    out["fixed"] = stats.get("fixed", 0) + stats.get("commands", {}).get("fixed", 0)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    out["cpu"] = round(_cpu() - cpu0, 3)
    return out


def _cpu() -> float:
    """CPU seconds of this process and the compilers it ran (the machine may be shared: wall
    time says little about what a case costs)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _worker(seed: int, cases: list[int], stages: tuple[int, int], sharing: bool = False) -> None:
    import warnings

    warnings.simplefilter("ignore")
    for k in cases:
        print(json.dumps({"start": k}), flush=True)
        print(json.dumps(run_case(seed, k, stages, sharing)), flush=True)


def _sanitizer_env() -> dict:
    from ..runtime.compiler import find_compiler, sanitizer_preload

    lib = sanitizer_preload(find_compiler())
    if not lib:
        sys.exit("--sanitize: the C compiler has no AddressSanitizer runtime (libasan); install it (gcc's libasan)")
    return {"TESSEL_SANITIZE": "address,undefined", "LD_PRELOAD": lib, "ASAN_OPTIONS": "detect_leaks=0",
            "UBSAN_OPTIONS": "print_stacktrace=1"}


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer")


def _report(stderr_path: str) -> str:
    """A sanitizer's report in what a dead worker wrote to its stderr ("" if none)."""
    with open(stderr_path, errors="replace") as fh:
        text = fh.read()
    at = min((text.find(m) for m in SANITIZER_MARKS if m in text), default=-1)
    return text[max(at - 200, 0):] if at >= 0 else ""


def _run_jobs(args, cases: list[int], env: dict, logdir: str, record: Callable[[dict], None]) -> None:
    """Run ``cases`` in ``args.jobs`` workers, reading whichever speaks; a worker that dies costs
    the case it was running (recorded as crashed, or as a sanitizer's report when its stderr
    holds one), and a new worker goes on after it."""
    queues = [cases[j:: args.jobs] for j in range(args.jobs)]
    sel = selectors.DefaultSelector()
    current: dict[int, int | None] = {}

    def start(j: int) -> None:
        if not queues[j]:
            return
        cmd = [sys.executable, "-m", "tessel.testing.fuzz", "--worker", "--seed", str(args.seed),
               "--stages", args.stages, "--only", ",".join(map(str, queues[j]))] + (["--sharing"] if args.sharing else [])
        with open(os.path.join(logdir, f"worker{j}.err"), "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        sel.register(proc.stdout, selectors.EVENT_READ, (j, proc))
        current[j] = None

    for j in range(args.jobs):
        start(j)
    while sel.get_map():
        for key, _ in sel.select():
            j, proc = key.data
            line = proc.stdout.readline()
            if line:
                try:
                    msg = json.loads(line)
                except ValueError:  # something the kernel or a library printed
                    continue
                if "start" in msg:
                    current[j] = msg["start"]
                else:
                    queues[j].remove(msg["case"])
                    current[j] = None
                    record(msg)
                continue
            sel.unregister(proc.stdout)
            proc.wait()
            if current[j] is not None:  # it died running this case
                report = _report(os.path.join(logdir, f"worker{j}.err"))
                record({"case": current[j], "outcome": "sanitizer" if report else "crashed",
                        "message": (report or f"the worker died (exit status {proc.returncode})")[:4000],
                        "program": f"# python -m tessel.testing.fuzz --seed {args.seed} --case {current[j]}"
                                   f"{' --sharing' if args.sharing else ''}"})
                queues[j].remove(current[j])
            start(j)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tessel.testing.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first", type=int, default=0, help="index of the first case")
    p.add_argument("--case", type=int, help="run this one case and print its program")
    p.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--stages", default="1-3", help="stages per program, lo-hi")
    p.add_argument("--sanitize", action="store_true", help="build the C with ASan and UBSan")
    p.add_argument("--findings", default="fuzz_findings.txt", help="file the failing programs are appended to")
    p.add_argument("--sharing", action="store_true",
                   help="the loop-sharing path (fuzz_sharing: nvFuser-shaped programs, positions, compute_with)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--only", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    stages = tuple(int(x) for x in args.stages.split("-"))
    if args.worker:
        _worker(args.seed, [int(x) for x in args.only.split(",")], stages, args.sharing)
        return 0
    if args.case is not None:
        out = run_case(args.seed, args.case, stages, args.sharing)
        print(out.get("program") or "", out.get("message") or "", f"outcome: {out['outcome']}", sep="\n")
        return 0 if out["outcome"] in ("accepted", "refused") else 1
    return _campaign(args, stages)


def _campaign(args, stages: tuple[int, int]) -> int:
    counts: Counter = Counter()
    seconds: list[float] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tessel-fuzz-") as logdir:
        env = dict(os.environ)
        if args.sanitize:
            env.update(_sanitizer_env())

        def record(msg: dict) -> None:
            counts[msg["outcome"]] += 1
            counts["fix-applied"] += bool(msg.get("fixed"))
            seconds.append(msg.get("cpu", 0.0))
            if msg["outcome"] not in ("accepted", "refused"):
                first = re.sub(r"\s+", " ", msg.get("message", ""))[:300]
                with open(args.findings, "a") as fh:
                    fh.write(f"==== seed {args.seed} case {msg['case']}: {msg['outcome']}: {first}\n"
                             f"{msg.get('program', '')}\n\n")
            done = sum(counts[k] for k in OUTCOMES)
            if done % 100 == 0:
                print(f"{done} cases, {time.perf_counter() - t0:.0f} s: {_summary(counts)}", flush=True)

        _run_jobs(args, list(range(args.first, args.first + args.cases)), env, logdir, record)
    wall = time.perf_counter() - t0
    print(f"seed {args.seed}, cases {args.first}..{args.first + args.cases - 1}{', sanitizers on' if args.sanitize else ''}: "
          f"{_summary(counts)}")
    print(f"{wall:.0f} s on {args.jobs} workers; {sum(seconds) / max(len(seconds), 1):.3f} CPU s per case "
          "(the worker's and its compilers')")
    return 0 if all(counts[k] == 0 for k in ("wrong", "crashed", "sanitizer")) else 1


OUTCOMES = ("accepted", "refused", "wrong", "crashed", "sanitizer")


def _summary(counts: Counter) -> str:
    return ", ".join(f"{k} {counts[k]}" for k in ("accepted", "refused", "fix-applied", "wrong", "crashed", "sanitizer"))


if __name__ == "__main__":
    sys.exit(main())
