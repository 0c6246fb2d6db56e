"""Regenerate the README's pictures (docs/img/*.svg) from the seed 001 example scripts.

    python examples/make_pictures.py

The pictures are drawn by tessel's own layout (engine="python"), so they come out the same
whether or not Graphviz is installed.
"""

from __future__ import annotations

from pathlib import Path

from tessel import viz
from tessel.cli import run_script

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "docs" / "img"


def schedule_of(script: str):
    run = run_script(HERE / script, stdout_to_stderr=True)
    if run.failure or not run.schedules:
        raise SystemExit(f"{script} did not build its schedule:\n{run.failure}")
    return run.schedules[-1]


def after(sch, primitive: str):
    """The schedule as it was right after the first call of ``primitive``."""
    return next(r.snapshot for r in sch.history if r.primitive == primitive)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    example5 = schedule_of("seed001_example5.py")
    illegal = after(example5, "cache_read")  # step 2: B.local under the root, B inside C's loop
    pictures = {
        "example5_step2_schedule_tree.svg": viz.schedule_tree(illegal),
        "example5_step2_dataflow_graph.svg": viz.dataflow_graph(illegal),
        "split_reorder_itervar_graph.svg": viz.itervar_graph(schedule_of("seed001_split_reorder.py"), stage="C"),
        "rfactor_itervar_graph.svg": viz.itervar_graph(schedule_of("seed001_rfactor.py")),
    }
    pictures.update(seed003_pictures())
    for name, view in pictures.items():
        view.save(OUT / name, engine="python")
        print(f"wrote {OUT / name}")


def seed003_pictures() -> dict:
    """computeAt by position (docs/compute_at.md): the schedule tree after it, and the replayed
    split in the IterVar DAGs of the stages that followed t3."""
    ca = schedule_of("seed003_compute_at.py")
    return {
        "compute_at_pos_schedule_tree.svg": viz.schedule_tree(ca),
        "compute_at_pos_itervar_graph.svg": viz.itervar_graph(ca, stage=["t1", "t2", "t3", "t4"]),
    }


if __name__ == "__main__":
    main()
