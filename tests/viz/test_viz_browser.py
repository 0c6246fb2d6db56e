"""The explorer in a real headless Chromium, driven by Playwright: it loads without console
errors, steps with the keyboard and by clicking, shows Example 5's illegal step with its
explanation and fix, and diffs the IR of two steps. A screenshot is kept for review.

Chromium comes from the system (``.ci/run`` installs Debian's package); Playwright's own
browser download is never used. Without a browser the tests skip, unless
TESSEL_REQUIRE_BROWSER=1 (set by CI) makes that a failure.
"""

from __future__ import annotations

import pytest
from viz_util import EXAMPLES, browser_page

from tessel.cli import main


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("explorer")
    report = out / "example5.html"
    assert main(["explain", str(EXAMPLES / "seed001_example5.py"), "-o", str(report), "--engine", "python"]) == 0
    yield from browser_page(report, out)


def _step(pg) -> int:
    return int(pg.get_attribute("body", "data-step"))


def test_loads_without_errors(page):
    assert page.problems == []
    assert page.title() == "tessel explain seed001_example5.py"
    assert page.locator("#steps li").count() == 4
    assert _step(page) == 0
    assert page.inner_text("#step-title") == "Step 0: create_schedule(C.op)"
    for view in ("tree", "dataflow", "itervar"):
        assert page.locator(f"#view-{view} svg").count() == 1


def test_keyboard_and_click_stepping(page):
    page.click("#step-title")  # focus the page, not a control
    page.keyboard.press("ArrowRight")
    assert _step(page) == 1
    assert page.inner_text("#code") == "s[B].compute_at(s[C], s[C].op.axis[0])"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # past the end: stays on the last step
    assert _step(page) == 3
    page.keyboard.press("ArrowLeft")
    assert _step(page) == 2
    page.click("#steps li[data-index='0']")
    assert _step(page) == 0
    page.click("#next")
    assert _step(page) == 1
    page.click("#prev")
    assert _step(page) == 0
    assert page.problems == []


def test_illegal_step_shows_explanation_and_fix(page):
    page.click("#steps li[data-index='2']")
    assert _step(page) == 2
    assert "made illegal" in page.inner_text("#steps li[data-index='2']")
    problem = page.inner_text("#problem")
    assert "This step made the schedule illegal" in problem
    assert "B.local" in page.inner_text("#problem .explanation")
    assert "compute_at" in page.inner_text("#problem .fix")
    assert page.inner_text("#code") == 'BL = s.cache_read(B, "local", readers=[C])'
    assert "stage:B.local" in page.inner_html("#view-tree")  # B.local under the root, drawn
    assert page.inner_text("#ir").startswith("(no IR: ScheduleError")
    page.screenshot(path=str(page.shots / "example5_step2_illegal.png"), full_page=True)
    page.click("#steps li[data-index='3']")
    assert "legal again" in page.inner_text("#problem")
    page.screenshot(path=str(page.shots / "example5_step3_fixed.png"), full_page=True)
    assert (page.shots / "example5_step2_illegal.png").stat().st_size > 10_000


def test_ir_diff_between_chosen_steps(page):
    page.click("#steps li[data-index='3']")
    page.select_option("#diff-a", "1")
    page.select_option("#diff-b", "3")
    added = page.locator("#diff .add").all_inner_texts()
    assert any("B.local" in line for line in added)
    assert page.locator("#diff .del").count() > 0
    page.select_option("#diff-a", "2")
    assert "step 2 has no lowered IR" in page.inner_text("#diff")
    page.select_option("#ir-kind", "schedule_ops")
    assert "produce B.local" in page.inner_text("#ir")
    assert page.problems == []


def test_pictures_fit_and_zoom(page):
    """Pictures shrink to fit their box down to a readable size; the zoom buttons work and the
    zoom chosen stays from step to step."""
    view = page.locator("#view-dataflow")
    assert 0.75 <= float(view.get_attribute("data-zoom")) <= 1.0
    page.click("section:has(#view-dataflow) .tools button:has-text('1:1')")
    assert view.get_attribute("data-zoom") == "1.000"
    page.click("#next")  # the choice stays for the next step
    assert page.locator("#view-dataflow").get_attribute("data-zoom") == "1.000"
    page.click("section:has(#view-dataflow) .tools button:has-text('fit')")
    assert float(page.locator("#view-dataflow").get_attribute("data-zoom")) <= 1.0
    assert view.evaluate("d => d.querySelector('svg').getBoundingClientRect().width <= d.clientWidth + 1")
    assert page.problems == []
