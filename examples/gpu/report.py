"""Build a GPU schedule for the cuda target (sm_80 and sm_90) and print its static figures."""

from __future__ import annotations

import tessel


def figures(s, args, archs=("sm_80", "sm_90"), name: str = "main") -> list[dict]:
    """One row per kernel and architecture: registers, shared memory, spills, occupancy, counts."""
    rows = []
    for arch in archs:
        mod = tessel.build(s, args, target=f"cuda -arch={arch}", name=name)
        rows += mod.figures()
    return rows


def show(title: str, rows: list[dict]) -> None:
    print(title)
    cols = ("kernel", "arch", "block", "registers", "shared_bytes", "spill_stores", "occupancy", "limited_by",
            "sass_instructions", "counted_in", "instructions", "fma", "loads", "shuffles", "barriers")
    print("  " + " ".join(f"{c:>12}" for c in cols))
    for r in rows:
        print("  " + " ".join(f"{r.get(c)!s:>12}" for c in cols))
