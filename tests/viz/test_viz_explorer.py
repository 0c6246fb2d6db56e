"""The explorer page: one self-contained file, with the right data for every step."""

from __future__ import annotations

import re

import pytest
from viz_util import example_schedule, page_data

import tessel
from tessel import te, viz


@pytest.fixture(scope="module")
def example5():
    return example_schedule("seed001_example5.py")


@pytest.fixture(scope="module")
def example5_page(example5):
    return viz.explorer(example5, engine="python")


def test_page_is_self_contained(example5_page):
    text = example5_page
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src=", text)
    assert not re.search(r"<link(?![^>]*href=\"data:)", text)
    assert not re.search(r"@import|url\(", text)
    # the only URLs are XML namespace names, which are never fetched
    assert set(re.findall(r"https?://[^\s\\\"'<>]+", text)) <= {"http://www.w3.org/2000/svg"}


def test_example5_steps(example5_page):
    data = page_data(example5_page)
    (sched,) = data["schedules"]
    steps = sched["steps"]
    assert [st["call"] for st in steps] == [
        "create_schedule(C.op)",
        "s[B].compute_at(s[C], ci)",
        "s.cache_read(B, 'local', readers=[C])",
        "s[B.local].compute_at(s[C], ci)",
    ]
    assert [st["state"] for st in steps] == ["ok", "ok", "illegal", "ok"]
    assert [st["transition"] for st in steps] == ["", "", "made illegal", "made legal"]
    bad = steps[2]
    assert bad["code"] == 'BL = s.cache_read(B, "local", readers=[C])'
    assert bad["problem"]["type"] == "ScheduleError"
    assert "B.local" in bad["problem"]["explanation"]
    assert "compute_at" in bad["problem"]["fix"]
    assert bad["ir"] == {}
    for st in (steps[1], steps[3]):
        assert st["ir"]["lowered"].startswith("func main(")
        assert "produce B" in st["ir"]["schedule_ops"]
    assert "B.local" in steps[3]["ir"]["lowered"]
    # every step has all three views; unchanged pictures are stored once
    for st in steps:
        assert set(st["views"]) == {"tree", "dataflow", "itervar"}
        assert all(0 <= i < len(data["svgs"]) for i in st["views"].values())
    assert steps[1]["views"]["tree"] != steps[2]["views"]["tree"]
    # the bounds table: B computed at C's loop ci needs one row of B per iteration
    rows = {(r[0], r[1]): r for r in steps[1]["bounds"]}
    assert rows[("B", "bi")][2:] == ["root, loop 0", "ci", "1"]
    assert rows[("C", "cj")][2:] == ["root, loop 1", "0", "N"]


def test_lower_arguments_are_used_per_step():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    data = page_data(viz.explorer(s, args=[A, B, C], engine="python"))
    steps = data["schedules"][0]["steps"]
    for st in steps:
        assert st["ir"]["lowered"].splitlines()[0] == "func main(A: float32[n], B: float32[n], C: float32[n]) {"
    # a split changes the tree, not the dataflow graph: that picture is stored once
    assert steps[0]["views"]["dataflow"] == steps[1]["views"]["dataflow"]
    assert steps[0]["views"]["tree"] != steps[1]["views"]["tree"]
    assert len(data["svgs"]) == 5
    data = page_data(viz.explorer(s, engine="python"))  # default: inputs, then outputs
    assert data["schedules"][0]["steps"][0]["ir"]["lowered"].startswith("func main(A: float32[n], C: float32[n])")


def test_failed_call_and_several_schedules(tmp_path):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s1 = te.create_schedule(B.op)
    with pytest.raises(tessel.ScheduleError):
        s1[B].split(B.op.axis[0])
    s2 = te.create_schedule(B.op)
    out = tmp_path / "r.html"
    text = viz.explorer([s1, s2], path=out, engine="python", title="two <schedules>")
    assert out.read_text() == text
    assert "<title>two &lt;schedules&gt;</title>" in text
    data = page_data(text)
    assert [len(sc["steps"]) for sc in data["schedules"]] == [2, 1]
    assert data["schedules"][0]["label"].startswith("1. schedule of B (test_viz_explorer.py:")
    failed = data["schedules"][0]["steps"][1]
    assert failed["call_error"]["type"] == "ScheduleError" and "factor" in failed["call_error"]["message"]
    assert failed["state"] == "ok"  # the call failed; the schedule is still fine
    assert len(page_data(viz.explorer(s1.history, engine="python"))["schedules"][0]["steps"]) == 2


def test_script_end_tag_in_data_cannot_close_the_script():
    A = te.placeholder((4,), name="</script><b>")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    text = viz.explorer(te.create_schedule(B.op), engine="python")
    assert text.count("</script>") == 2  # the data block's and the program's own
    assert page_data(text)["schedules"][0]["steps"][0]["ir"]["lowered"].startswith("func main(</script><b>")


def test_bad_input():
    with pytest.raises(tessel.TesselError, match="explorer needs a schedule"):
        viz.explorer([])
    with pytest.raises(tessel.TesselError, match="explorer needs a schedule"):
        viz.explorer("s")
