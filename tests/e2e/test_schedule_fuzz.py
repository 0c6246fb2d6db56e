"""A random schedule fuzzer: small pipelines, random legal schedules, both targets vs NumPy.

The generator lives in :mod:`tessel.testing` (``fuzz_programs``, ``fuzz_features``,
``fuzz_schedules``; the runner and the script in ``fuzz``), shared with ``python -m
tessel.testing.fuzz``, which runs thousands of cross-feature cases and prints the counts.
Each example builds a pipeline of one to three stages over a 2-D input with awkward sizes
(1, 3, 7, 10, 13) and applies a random sequence of schedule primitives -- TE primitives (and,
in some tests, seed 003's position primitives and seed 004's commands, each refusal replaced
by the fix tessel proposes) -- then runs the result on the python and C targets against
NumPy (``check``, random data, never zeros). The cross-feature slice draws the fuzzer's whole
space: stencils, reductions with ``init=``/``where=``, recurrences, scans, in-place stages,
symbolic sizes with ``s.assume``, under schedules mixing every family and the storage commands.

The generator writes every step as a line of Python and executes that line, so a failure is
reported as the exact program that reproduces it (see the ``note`` in hypothesis' output). A
primitive tessel refuses with a :class:`ScheduleError` is dropped from the program (or replaced
by its fix); a whole schedule refused as illegal at build time is counted as rejected, and most
examples must be accepted. Anything else -- a wrong value on either target, any other
exception, a C compile error -- is a bug.

Settings: ``TESSEL_FUZZ_EXAMPLES`` (default 40 per test) and ``TESSEL_FUZZ_SEED`` (default 0: a
fixed seed, so CI runs the same examples every time; set another number to explore others).
``TESSEL_FUZZ_STAGES=lo-hi`` (e.g. ``4-6``, at most 6) makes the three-stage test build deeper
pipelines instead -- for exploring only: CI keeps three stages, and its time.
``TESSEL_FUZZ_STEPS`` (default 14) is the most schedule primitives drawn per example.
``TESSEL_FUZZ_CASES`` (default 240) is the size of the cross-feature slice.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from helpers import check, rand
from hypothesis import HealthCheck, Phase, given, note, seed, settings
from hypothesis import strategies as st

from tessel import te
from tessel.testing.choices import hypothesis_draw
from tessel.testing.fuzz import FuzzFailure, run_case
from tessel.testing.fuzz import run_example as _run_example
from tessel.testing.fuzz_programs import Program, build_pipeline  # noqa: F401  (other tests' names)
from tessel.testing.fuzz_schedules import apply_primitive  # noqa: F401

EXAMPLES = int(os.environ.get("TESSEL_FUZZ_EXAMPLES", "40"))
SEED = os.environ.get("TESSEL_FUZZ_SEED")
# exploring: TESSEL_FUZZ_COLLECT=file appends every failing program to the file instead of stopping
# at the first; with TESSEL_FUZZ_MATCH=regex, failures matching it still fail (and are shrunk)
COLLECT = os.environ.get("TESSEL_FUZZ_COLLECT")
MATCH = os.environ.get("TESSEL_FUZZ_MATCH")
# exploring deeper pipelines: "lo-hi" stages in the three-stage test (CI: unset, three stages)
DEEP = tuple(int(x) for x in os.environ["TESSEL_FUZZ_STAGES"].split("-")) if os.environ.get("TESSEL_FUZZ_STAGES") else (3, 3)
STEPS = int(os.environ.get("TESSEL_FUZZ_STEPS", "14"))  # at most this many schedule primitives
CASES = int(os.environ.get("TESSEL_FUZZ_CASES", "240"))

# the fuzzer's arg-max breaks ties by position: rfactor trusts its te.comm_reducer and warns
pytestmark = pytest.mark.filterwarnings("ignore:.*rfactor trusts that")

# the commands' family prints the failing program itself; shrinking it took minutes
PHASES_NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # with the fixed seed below, every run sees the same examples
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    print_blob=False,
)


def run_example(draw, stats: dict, stages: tuple[int, int], positions: bool = False, commands: bool = False) -> None:
    """The shared runner with hypothesis' draws and notes; with ``TESSEL_FUZZ_COLLECT`` a failure
    is appended to that file (and fails only when it matches ``TESSEL_FUZZ_MATCH``)."""
    try:
        _run_example(hypothesis_draw(draw), stats, stages, positions, commands, steps=STEPS, note=note)
    except FuzzFailure as f:
        if COLLECT:
            with open(COLLECT, "a") as fh:
                fh.write(f"==== {str(f).splitlines()[0]}\n{f.program}\n")
            if not (MATCH and re.search(MATCH, str(f))):
                return
        raise


def _fuzz(stages: tuple[int, int], part: int = 0, examples: int = EXAMPLES, positions: bool = False,
          commands: bool = False) -> dict:
    stats: dict = {}

    # each family (and part of one) its own examples
    @seed(int(SEED or 0) * 1000 + 100 * part + 10 * stages[0] + stages[1] + 7 * positions + 13 * commands)
    @settings(FUZZ, max_examples=examples, phases=PHASES_NO_SHRINK if commands else FUZZ.phases)
    @given(st.data())
    def run(data):
        run_example(data.draw, stats, stages, positions, commands)

    run()
    if os.environ.get("TESSEL_FUZZ_STATS"):
        print(stages, part, stats)
    total = stats.get("accepted", 0) + stats.get("rejected", 0)
    # commands over non-affine indices are refused at lowering: fewer of those schedules pass
    assert total and stats.get("accepted", 0) >= (0.5 if commands else 0.6) * total, stats
    return stats


def test_schedule_fuzz_short_pipelines():
    _fuzz((1, 2))


def test_schedule_fuzz_positions():
    """The same pipelines with seed 003's position primitives mixed in (compute_at by position,
    propagate, inline_at, inline_most, inline_all_at), half of them with a second output
    reading an earlier stage (a row sum or a map: readers with no common consumer)."""
    _fuzz(DEEP, 2, max(EXAMPLES // 2, 1), positions=True)


@pytest.mark.parametrize("part", [0, 1])
def test_schedule_fuzz_commands(part):
    """The same pipelines with seed 004's commands mixed in (shift, skew, reverse, interchange,
    after/before): no wrong value, and every refused command whose fix tessel proposes is
    replaced by that fix, which must give the right values too."""
    stats = _fuzz((1, 3) if part else (2, 3), 3 + part, max(EXAMPLES // 2, 1), commands=True)
    assert sum(stats.get("commands", {}).values()) > 0, stats


@pytest.mark.parametrize("part", [0, 1])
def test_schedule_fuzz_three_stages(part):
    """Three stages take longer to build and run: two halves, so that test workers share them."""
    _fuzz(DEEP, part, max(EXAMPLES // 2, 1))


@pytest.mark.parametrize("part", range(6))
def test_cross_feature_fuzz_slice(part):
    """A slice of ``python -m tessel.testing.fuzz``'s cases (seed 0, ``TESSEL_FUZZ_CASES`` in
    all, in six parts that test workers share): stencils, reductions with init=/where=,
    recurrences, scans, in-place stages and symbolic sizes with s.assume, under schedules mixing
    TE primitives, positions, commands and storage commands, with every proposed fix applied.
    Each case is named by its seed and index: rerun one with ``--seed 0 --case K``."""
    seed_ = int(SEED or 0)
    results = [run_case(seed_, k) for k in range(part, CASES, 6)]
    bad = [r for r in results if r["outcome"] not in ("accepted", "refused")]
    listing = "\n".join(f"  case {r['case']}: {r['outcome']}: {r['message'].splitlines()[0][:120]}" for r in bad)
    assert not bad, f"{len(bad)} of {len(results)} cases failed:\n{listing}\n\n" + "\n\n".join(
        f"case {r['case']} ({r['outcome']}): python -m tessel.testing.fuzz --seed {seed_} --case {r['case']}\n"
        f"{r['message']}\n{r['program']}" for r in bad[:3])
    accepted = sum(r["outcome"] == "accepted" for r in results)
    assert accepted >= 0.5 * len(results), f"only {accepted} of {len(results)} cases accepted"


@pytest.mark.parametrize("part", range(2))
def test_loop_sharing_fuzz_slice(part):
    """A slice of ``python -m tessel.testing.fuzz --sharing`` (its own seeds; the cases above are
    unchanged): nvFuser-shaped programs under compute_at by position in every mode, compute_with,
    propagation and the inliner. No wrong value, and the slice reaches the placements it is there
    for: a reduction sharing another's reduction loop, a stage computed with its reader, a reader
    computed over each iteration's box."""
    results = [run_case(int(SEED or 0), k, sharing=True) for k in range(part, 120, 2)]
    bad = [r for r in results if r["outcome"] not in ("accepted", "refused")]
    assert not bad, "\n\n".join(f"case {r['case']} ({r['outcome']}): python -m tessel.testing.fuzz --sharing "
                                 f"--case {r['case']}\n{r['message']}\n{r['program']}" for r in bad[:3])
    assert sum(r["outcome"] == "accepted" for r in results) >= 0.8 * len(results)


def test_the_loop_sharing_path_draws_the_new_placements():
    """Over 120 cases the drawn schedules that lower hold every kind of loop sharing."""
    import random

    import tessel.testing.fuzz as fz
    from tessel.testing.choices import random_draw

    seen: set[str] = set()
    lower = fz._lower_or_fix

    def note(prog, *args, **kwargs):
        ok = lower(prog, *args, **kwargs)
        for stage in prog.ns["s"].stages if ok else ():
            p = stage.placement
            if p.store is not None:
                seen.add("reduction loop" if any(iv.is_reduce for iv, _ in p.shared) else "compute_with")
            seen.update(["image"] if p.image else [])
        return ok

    try:
        fz._lower_or_fix = note
        for k in range(120):
            draw = random_draw(random.Random(f"tessel-fuzz-sharing:0:{k}"))
            try:
                fz.run_example(draw, {}, (1, 3), positions=True, commands=True, features=True, storage=True,
                               sharing=True)
            except FuzzFailure:
                pass  # the slices above report those (a TypeError here is this test's own)
    finally:
        fz._lower_or_fix = lower
    assert seen == {"reduction loop", "compute_with", "image"}, seen


SANITIZED_PROGRAM = """
import numpy as np
import tessel
from tessel import te

tessel.register_func("tsl_wraps", c_source="#include <stdint.h>\\nint32_t tsl_wraps(int32_t x) { return x + 2147483600; }\\n")
A = te.placeholder((4,), name="A", dtype="int32")
B = te.compute((4,), lambda i: te.call_extern("int32", "tsl_wraps", A[i]), name="B")
f = tessel.build(te.create_schedule(B.op), [A, B])
print(" ".join(f.compile_flags))
b = np.zeros(4, "int32")
f(np.array([1, 2, 3, 100], "int32"), b)
print("finished")
"""


def test_sanitizer_mode_reports_undefined_behaviour_in_the_c(tmp_path):
    """$TESSEL_SANITIZE=address,undefined with the runtime preloaded (the fuzzer's --sanitize):
    a signed overflow in C the kernel calls stops the process with UBSan's report, which the
    fuzzer finds in the worker's stderr; without the mode the same program runs to the end."""
    import subprocess
    import sys

    from tessel.runtime.compiler import find_compiler, sanitizer_preload
    from tessel.testing.fuzz import _report, _sanitizer_env

    if not sanitizer_preload(find_compiler()):
        pytest.skip("the C compiler has no AddressSanitizer runtime")
    prog = tmp_path / "prog.py"
    prog.write_text(SANITIZED_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "TESSEL_SANITIZE"}
    plain = subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "finished" in plain.stdout and "-fsanitize" not in plain.stdout, plain.stderr
    err = tmp_path / "stderr"
    with open(err, "w") as fh:
        run = subprocess.run([sys.executable, str(prog)], env={**env, **_sanitizer_env()}, stdout=subprocess.PIPE,
                             stderr=fh, text=True, timeout=300)
    assert "-fsanitize=address,undefined" in run.stdout and "finished" not in run.stdout
    assert run.returncode != 0
    assert "signed integer overflow" in _report(str(err))


def test_sanitizer_mode_refuses_without_its_runtime(monkeypatch):
    """A kernel built with ASan would end a process that has not preloaded its runtime while
    loading; tessel refuses first, saying how to start Python. A name it does not know is refused."""
    from tessel.errors import BuildError
    from tessel.runtime.compiler import sanitize_flags

    monkeypatch.delenv("TESSEL_SANITIZE", raising=False)
    assert sanitize_flags() == []
    monkeypatch.setenv("TESSEL_SANITIZE", "address,undefined")
    with pytest.raises(BuildError, match="LD_PRELOAD=.*libasan"):
        sanitize_flags()
    monkeypatch.setenv("TESSEL_SANITIZE", "memory")
    with pytest.raises(BuildError, match="TESSEL_SANITIZE names memory"):
        sanitize_flags()
    monkeypatch.setenv("TESSEL_SANITIZE", "undefined")  # UBSan alone needs no preloaded runtime
    assert sanitize_flags()[0] == "-fsanitize=undefined"


# ---- regressions: the fuzzer's findings, minimised ----------------------------------------
def test_compute_at_region_varying_with_the_loop_survives_loop_partition():
    """C's region inside D's fused-and-split loop has 2 or 3 columns depending on the outer
    loop, so its allocation size uses that loop's variable. Loop partitioning gives the outer
    loop's proved part a fresh variable; the substitution used to skip buffer shapes (leaves
    of the IR), leaving the size reading the old, unbound variable (BuildError)."""
    A = te.placeholder((13, 10), name="A")
    C = te.compute((13, 10), lambda i, j: A[i, j] * 2.0, name="C")
    D = te.compute((10, 13), lambda i, j: C[j, i] - 1.0, name="D")
    s = te.create_schedule(D.op)
    o, i = s[D].split(s[D].fuse(*D.op.axis), factor=17)
    s[C].compute_at(s[D], o)
    a = rand(13, 10)
    check(s, [A, D], [a], [a.T * 2 - 1])


def test_tile_then_split_of_the_inner_part_stays_in_bounds():
    """tile(5, 2) of a 7x5 loop nest, then split(x.inner, 4): loop partitioning cuts
    x.inner.outer into sibling loops over the same variable, the first of which may be empty.
    The simplifier kept a loop's range known after the loop, i.e. that it ran at least once,
    and so simplified the next sibling's extent wrongly, dropping the guard of the last rows:
    the kernel read A[35] past the end."""
    A = te.placeholder((7, 5), name="A")
    B = te.compute((7, 5), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 5, 2)
    s[B].split(xi, factor=4)
    a = rand(7, 5)
    check(s, [A, B], [a], [a * 2])


def test_simplify_forgets_a_loop_range_after_the_loop():
    """After ``for (i, 0, min(q, 1))`` nothing says the loop ran, so ``q >= 1`` is unknown."""
    from tessel.ir import expr as E
    from tessel.ir import stmt as S
    from tessel.passes.simplify import simplify_stmt

    i, x = E.Var("i"), E.Var("x")
    buf = S.Buffer("B", "float32", (10,))
    q = E.floordiv(E.sub(7, E.mul(x, 5)), 4)  # 1 for x = 0, 0 for x = 1
    loop = S.For(i, 0, E.min_(q, 1), "serial", S.BufferStore(buf, E.const(1.0, "float32"), (i,)))
    after = S.IfThenElse(E.ge(q, 1), S.BufferStore(buf, E.const(2.0, "float32"), (E.const(5),)))
    out = simplify_stmt(S.For(x, 0, 2, "serial", S.seq(loop, after)))
    assert "if (" in str(out)


def test_padding_computed_through_a_cache_write_at_the_row_loop():
    """A zero-padded copy computed row by row through cache_write: the C compiler (GCC 12,
    -O3) if-converted the guarded reads of each row into masked vector loads and gave one of
    them the wrong mask, so rows 3-5 read as zeros on the C target only. Kernels that read
    under a condition are now compiled without loop if-conversion."""
    A = te.placeholder((5, 3), name="A")
    B = te.compute((8, 3), lambda i, j: te.if_then_else(te.all(i >= 2, i < 7), A[i - 2, j], -0.75), name="B")
    C = te.compute((8, 3), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    BL = s.cache_write(B, "local")
    s[BL].compute_at(s[B], B.op.axis[0])
    a = rand(5, 3)
    check(s, [A, C], [a], [np.pad(a, [(2, 1), (0, 0)], constant_values=-0.75) * 2])


def test_guarded_loads_are_found_for_the_compiler_flags():
    from tessel.codegen.c import has_guarded_loads
    from tessel.driver import lower_steps
    from tessel.runtime.compiler import NO_IF_CONVERT, find_compiler

    A = te.placeholder((6,), name="A")
    # a guard no loop can be cut on (a padded copy's border is cut out by loop partitioning, a
    # test of i % 2 by running the residues apart)
    P = te.compute((8,), lambda i: te.if_then_else((i * i) % 3 == 0, A[i // 2 + 2], 0.0), name="P")
    f, _ = lower_steps(te.create_schedule(P.op), [A, P])
    assert has_guarded_loads(f.body)
    D = te.compute((6,), lambda i: te.select(A[i] > 0.0, 1.0, -1.0), name="D")  # reads, then chooses
    f, _ = lower_steps(te.create_schedule(D.op), [A, D])
    assert not has_guarded_loads(f.body)
    comp = find_compiler()
    if comp.supports("no_if_convert"):
        assert NO_IF_CONVERT in comp.flags(guarded_loads=True)
        assert NO_IF_CONVERT not in comp.flags()


def test_temporary_sized_by_an_outer_loop_is_allocated_inside_it():
    """C's region in D's loop over t varies with the loop outside t (a fused-and-split loop),
    so its size uses that loop's variable and C lives on the heap. The C target moved such a
    temporary out of the loops around it, up to the function or a parallel loop; stopped by
    the outer loop it never declared it (C compile error: C undeclared). It is now allocated
    once per iteration of that loop, at the top of its body."""
    A = te.placeholder((13, 10), name="A")
    C = te.compute((13, 10), lambda i, j: A[i, j] * 2.0, name="C")
    D = te.compute((10, 13, 2), lambda i, j, t: C[j, i] - t.astype("float32"), name="D")
    s = te.create_schedule(D.op)
    i, j, t = D.op.axis
    o, fi = s[D].split(s[D].fuse(i, j), factor=10)  # divides 130: no guard, nothing partitioned
    s[D].reorder(o, t, fi)
    s[C].compute_at(s[D], t)
    a = rand(13, 10)
    check(s, [A, D], [a], [(a.T[:, :, None] * 2 - np.arange(2)[None, None, :]).astype("float32")])


def test_symbolic_upsample_with_partitioned_compute_at_regions():
    """The fuzzer's program for the bug above: partitioned copies of a compute_at region whose
    size varies with j.outer, at two values of the symbolic sizes."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m - 1), lambda i, j: A[i, j] - A[i, j + 1] * 0.5, name="B")
    C = te.compute((n, (m - 1) * 2), lambda i, j: B[i, j // 2] * 0.75, name="C")
    D = te.compute((n, (m - 1) * 2), lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    s[C].vectorize(C.op.axis[1])
    s[C].split(C.op.axis[1], factor=3)
    s[B].compute_at(s[D], D.op.axis[0])
    s[C].compute_at(s[D], D.op.axis[0])
    s[D].vectorize(D.op.axis[1])
    s[D].tile(D.op.axis[0], D.op.axis[1], 3, 7)
    for shape in [(10, 7), (10, 23)]:
        a = rand(*shape)
        b = a[:, :-1] - a[:, 1:] * 0.5
        check(s, [A, D], [a], [np.repeat(b, 2, axis=1) * 0.75 + 1.0])


def test_flattened_cache_write_of_a_fused_stage_with_symbolic_size_is_not_refused():
    """cache_write of C after fusing its loops gives C.local one flat axis, read back as
    ``C.local[i*(n - 2) + j]``. The check for reads outside a tensor evaluated that index
    after simplification (``i*n - i*2 + j``: the two ``i`` taken as independent, so down to
    -32) and without knowing that ``n - 2 >= 1`` wherever C runs, and refused the legal
    schedule with a BoundError."""
    n = te.var("n")
    A = te.placeholder((17, n), name="A")
    C = te.compute((17, n - 2), lambda i, j: A[i, j + 2] * 2.0, name="C")
    D = te.compute((17, n - 2), lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    s[C].fuse(*s[C].leaf_iter_vars)
    s.cache_write(C, "local")
    for cols in (3, 10):
        a = rand(17, cols)
        check(s, [A, D], [a], [a[:, 2:] * 2 + 1])
