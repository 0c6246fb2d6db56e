"""PolyBench's 30 kernels, written as PolyBench states them (examples/polybench), each checked
against a NumPy transcription of PolyBench's own loops at two sizes on both targets, and held to
PolyBench's memory footprint (issue 33)."""

from __future__ import annotations

import pytest

from examples.polybench import KERNELS, check, footprint

#: kernels whose tessel program needs more memory than PolyBench's arrays, and why (issue 33)
OVER_FOOTPRINT: dict[str, str] = {
    "durbin": "beta, alpha and y are a scan's three states: y's two rows (PolyBench's y and z) and the "
              "last row copied into y, one row more than PolyBench (a scan's state is not stored in the "
              "caller's arrays taking turns)",
    "gramschmidt": "the state (nrm, R, A) is one temporary updated step by step (a recurrence has one "
                   "storage; PolyBench's state is three arrays), copied into A, R and Q",
}

CASES = [(k, size) for k in KERNELS for size in k.sizes]


@pytest.mark.parametrize("target", ["c", "python"])
@pytest.mark.parametrize(("kernel", "size"), CASES, ids=[f"{k.name}-{s}" for k, s in CASES])
def test_polybench_kernel_matches_its_loops(kernel, size, target):
    check(kernel, size, target)


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.name for k in KERNELS])
def test_polybench_kernel_in_polybench_footprint(kernel):
    size = next(iter(kernel.sizes))
    ours, theirs = footprint(kernel, size)
    # a few scalars' worth of temporaries (an accumulator kept in memory) is PolyBench's too
    within = ours <= theirs + 256
    # a kernel listed as over must be over: once fixed, it leaves the list
    assert within != (kernel.name in OVER_FOOTPRINT), (
        f"{kernel.name} {size}: {ours} bytes, PolyBench's arrays {theirs}; "
        f"listed as over: {OVER_FOOTPRINT.get(kernel.name, 'no')}")


def test_every_kernel_named_once_and_sized_twice():
    names = [k.name for k in KERNELS]
    assert len(names) == len(set(names))
    assert all(len(k.sizes) >= 2 for k in KERNELS)
