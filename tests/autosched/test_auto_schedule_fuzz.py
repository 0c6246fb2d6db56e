"""auto_schedule on 20 random pipelines of the schedule fuzzer's generator (elementwise maps,
stencils, transposes, pads, strides, upsampling, row and column reductions, argmax, matmuls,
1-d convolutions and pools; float and integer types; symbolic sizes now and then): the
schedule must lower at its full plan or a fallback, compute NumPy's values on both targets (at
a second size too, where the sizes are symbolic), and print as Python that rebuilds it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import given, note, seed, settings
from hypothesis import strategies as st

import tessel
from tessel.autosched import auto_schedule_result
from tessel.testing.choices import hypothesis_draw

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))  # test_schedule_fuzz
from test_schedule_fuzz import FUZZ, Program, build_pipeline


def auto(outputs, **kw):
    """The rule-based schedule alone (budget 0: nothing measured, nothing timed)."""
    return auto_schedule_result(outputs, **{"budget": 0, **kw})

PIPELINES = int(os.environ.get("TESSEL_AUTO_FUZZ_EXAMPLES", "20"))
LEVELS: dict[str, int] = {}


def _check_line(prog: Program) -> str:
    args = ", ".join([*prog.inputs, *prog.outputs])
    refs = ", ".join(prog.refs[t] for t in prog.inputs)
    want = ", ".join(prog.refs[t] for t in prog.outputs)
    tol = "rtol=0, atol=0" if prog.dtype.startswith("int") else "rtol=1e-4, atol=1e-4"
    return f"check(s, [{args}], [{refs}], [{want}], {tol})"


def run_pipeline(draw) -> None:
    prog = Program()
    build_pipeline(hypothesis_draw(draw), prog, (1, 3))
    outs = [prog.ns[t] for t in prog.outputs]
    r = auto(outs)
    LEVELS[r.level] = LEVELS.get(r.level, 0) + 1
    prog.ns["s"] = r.schedule
    text = r.schedule.python()
    note(prog.source() + "\n# auto_schedule:\n" + text)
    # the inputs auto_schedule found are the pipeline's placeholders, in its own order
    assert {t.name for t in r.args[: len(r.args) - len(outs)]} == {prog.ns[t].name for t in prog.inputs}
    line = _check_line(prog)
    exec(line, prog.ns)
    if prog.symbolic:
        n2 = prog.ns["N"] + draw(st.sampled_from([1, 4, 16])) if "N" in prog.symbolic else prog.ns["N"]
        m2 = prog.ns["M"] + draw(st.sampled_from([1, 4, 16])) if "M" in prog.symbolic else prog.ns["M"]
        for ln in [f"N, M = {n2}, {m2}", *prog.data_lines[1:], line]:
            exec(ln, prog.ns)
    ns: dict = {}
    exec(text, ns)
    again = ns["schedule"](*outs)
    args = [prog.ns[t] for t in [*prog.inputs, *prog.outputs]]
    assert str(tessel.lower(again, args)) == str(tessel.lower(r.schedule, args))


def test_auto_schedule_random_pipelines():
    @seed(1717 + int(os.environ.get("TESSEL_FUZZ_SEED") or 0))
    @settings(FUZZ, max_examples=PIPELINES)
    @given(st.data())
    def run(data):
        run_pipeline(data.draw)

    run()
    if os.environ.get("TESSEL_FUZZ_STATS"):
        print(LEVELS)
    assert sum(LEVELS.values()) >= PIPELINES
    # most pipelines get the whole plan, not a fallback
    assert LEVELS.get("full", 0) >= 0.8 * sum(LEVELS.values()), LEVELS
