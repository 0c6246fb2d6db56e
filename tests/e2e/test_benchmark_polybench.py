"""``python -m benchmarks.polybench`` reports what it measured and nothing it did not: a row per
kernel with footprints and times, a C body that computes something else is shown wrong (not
timed), one that does not compile says so, and a Polly column appears only for a compiler that
builds. No timing is asserted; clang need not be installed (the Polly path is driven with gcc's
OpenMP standing in for it)."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import polybench
from examples.polybench import BY_NAME

NUMBER = re.compile(r"^\d+(\.\d+)?$")
# a stencil when the catalog has one (the stencils are being added), an int32 kernel otherwise
THIRD = "jacobi-1d" if "jacobi-1d" in BY_NAME else "floyd-warshall"


def _rows(out: str) -> dict[str, list[str]]:
    """The table's cells by the first one, header and geomean rows included."""
    rows = {}
    for line in out.splitlines():
        if line.startswith("| ") and not line.startswith("|--"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0]] = cells
    return rows


def _numbers(cells: list[str]) -> bool:
    return all(NUMBER.match(c) for c in cells)


def test_each_kernel_has_a_row_of_footprints_and_times(capsys):
    names = ["gemm", "lu", THIRD]
    assert polybench.main(["--size", "ODD", "--kernels", ",".join(names), "--repeat", "1"]) == 0
    rows = _rows(capsys.readouterr().out)
    head = rows["kernel"]
    assert head[:5] == ["kernel", "size", "tessel B", "PolyBench B", "tessel/PolyBench B"]
    assert head[5:10] == ["tessel 1t us", "tessel 2t us", "gcc -O3 1t us", "speedup vs gcc 1t", "speedup vs gcc 2t"]
    for name in names:
        cells = rows[name]
        assert len(cells) == len(head) and cells[1] == "ODD"
        assert _numbers(cells[2:10]), cells  # bytes, memory ratio, times and speedups: all measured
        sizes, kernel = BY_NAME[name].sizes["ODD"], BY_NAME[name]
        theirs = sum(v.nbytes for v in kernel.init(sizes).values() if isinstance(v, np.ndarray))
        assert int(cells[3]) == theirs  # PolyBench's arrays, as init_array allocates them
        # the Polly cells: "n/a" without clang, numbers with it (which is never asserted)
        assert all(NUMBER.match(c) or c in ("n/a", "—") for c in cells[10:])
    assert f"geomean stencils ({int(THIRD == 'jacobi-1d')})" in rows  # over the stencils chosen
    assert NUMBER.match(rows["geomean all (3)"][4]) and NUMBER.match(rows["geomean all (3)"][8])


def test_a_c_body_that_computes_something_else_is_wrong_and_one_that_does_not_compile_says_so(capsys):
    gemm = BY_NAME["gemm"]
    wrong = replace(gemm, name="gemm-no-alpha", c_loops=gemm.c_loops.replace("alpha * ", ""))
    broken = replace(gemm, name="gemm-typo", c_loops=gemm.c_loops.replace("C[i][j] *= beta;", "C[i][j] *= beta"))
    assert polybench.main(["--size", "ODD", "--repeat", "1"], catalog=[wrong, broken]) == 1
    captured = capsys.readouterr()
    rows = _rows(captured.out)
    gcc = rows["kernel"].index("gcc -O3 1t us")
    assert rows["gemm-no-alpha"][gcc] == "wrong" and rows["gemm-typo"][gcc] == "C does not build"
    for name in ("gemm-no-alpha", "gemm-typo"):
        assert _numbers(rows[name][5:7])  # tessel's own kernel is still timed
        assert rows[name][gcc + 1:gcc + 3] == ["—", "—"]  # and compared with nothing
    assert "gemm-no-alpha ODD: gcc: wrong: C differs at" in captured.err
    assert "gemm-typo ODD: gcc: C does not build:" in captured.err


def test_a_compiler_standing_in_for_polly_gets_its_columns_at_each_thread_count(capsys, monkeypatch):
    """gcc with OpenMP as "Polly": its calls set the thread count, and its times and tessel's
    speedups over them fill the Polly columns."""
    stand_in = polybench.Compiler("Polly", ("gcc", *polybench.FLAGS, "-fopenmp"), threaded=True)
    monkeypatch.setattr(polybench, "find_polly", lambda directory: (stand_in, "parallel"))
    assert polybench.main(["--size", "ODD", "--kernels", "gemm", "--repeat", "1", "--threads", "1,2"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["kernel"][10:] == ["Polly 1t us", "Polly 2t us", "speedup vs Polly 1t", "speedup vs Polly 2t"]
    assert _numbers(rows["gemm"][2:])
    assert _numbers(rows["geomean all (1)"][12:14])


def test_a_scaled_size_that_only_rounding_tells_apart_is_timed_and_marked(capsys):
    """At ``--scale`` a contender that differs from the reference at the scaled size but is
    right at the kernel's own dataset is timed with a "!" (gramschmidt's rank-deficient
    scaled sizes); here a reference that drifts at the larger size stands in for rounding."""
    gemm = BY_NAME["gemm"]

    def drifting(sizes, arrays):
        gemm.reference(sizes, arrays)
        if sizes["NI"] > gemm.sizes["ODD"]["NI"]:
            arrays["C"][0, 0] += 1.0
    kernel = replace(gemm, name="gemm-drift", reference=drifting)
    assert polybench.main(["--size", "ODD", "--scale", "2", "--repeat", "1", "--threads", "1"], catalog=[kernel]) == 0
    captured = capsys.readouterr()
    cells = _rows(captured.out)["gemm-drift"]
    assert cells[1] == "ODDx2" and cells[5].endswith("!") and cells[6].endswith("!")
    assert int(cells[3]) == 8 * (26 * 34 + 26 * 22 + 22 * 34)  # every size doubled
    assert "differs from the reference at this size only" in captured.err


def test_the_c_parameters_are_the_init_arrays_and_scalars_in_their_types():
    start = {"alpha": 1.5, "seq": np.zeros(7, np.int8), "table": np.zeros((7, 7), np.int32),
             "A": np.zeros((3, 4, 5)), "n": 3}
    c = polybench.translation_unit("\n  table[0][0] = seq[0];", {"N": 7}, start)
    assert "void kernel(double alpha, signed char *restrict seq, int (*restrict table)[7], " \
           "double (*restrict A)[4][5], int n)" in c
    assert "#define N 7" in c and "#include <math.h>" in c

