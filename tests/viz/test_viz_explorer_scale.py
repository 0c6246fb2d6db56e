"""The explorer on a schedule of real size (examples/explorer_at_scale.py: twelve stages, more
than forty steps), in headless Chromium: pictures keep a readable size and pan instead of
shrinking, every view zooms (buttons and Ctrl + wheel), stages collapse from the panel or by
clicking them, the IR pane is resized and searched, and a screenshot is kept for review."""

from __future__ import annotations

import json
import re

import pytest
from viz_util import EXAMPLES, browser_page

from tessel.cli import main

SCRIPT = EXAMPLES / "explorer_at_scale.py"
VISIBLE = "els => els.filter(e => getComputedStyle(e).display !== 'none' && e.getClientRects().length).length"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale")
    report = out / "scale.html"
    assert main(["explain", str(SCRIPT), "-o", str(report), "--engine", "python"]) == 0
    text = report.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
    for pg in browser_page(report, out):
        pg.data = data
        pg.click("#steps li:last-child")
        yield pg


def _zoom(page, key: str) -> float:
    return float(page.get_attribute(f"#view-{key}", "data-zoom"))


def _button(page, key: str, text: str) -> str:
    return f"section:has(#view-{key}) .tools button:has-text('{text}')"


def test_all_steps_and_stages_listed(page):
    steps = page.data["schedules"][0]["steps"]
    assert len(steps) >= 41 and page.locator("#steps li").count() == len(steps)
    assert page.locator("#stage-list input").count() == 12
    assert all(st["state"] == "ok" for st in steps)
    assert page.problems == []


def test_pictures_stay_readable(page):
    for key in ("tree", "dataflow", "itervar"):
        assert _zoom(page, key) >= 0.75, key
        # text drawn at 11 px stays at least 8 px tall on screen
        height = page.eval_on_selector(f"#view-{key} svg g text", "t => t.getBoundingClientRect().height")
        assert height >= 8, (key, height)
    tree = page.locator("#view-tree")
    # too wide to fit at a readable size: the box scrolls (pans) instead of shrinking
    assert tree.evaluate("d => d.scrollWidth > d.clientWidth")
    page.screenshot(path=str(page.shots / "scale_last_step.png"), full_page=True)
    assert (page.shots / "scale_last_step.png").stat().st_size > 50_000


def test_zoom_buttons_wheel_and_persistence(page):
    z0 = _zoom(page, "itervar")
    page.click(_button(page, "itervar", "+"))
    assert _zoom(page, "itervar") == pytest.approx(z0 * 1.25, abs=2e-3)
    page.click(_button(page, "itervar", "fit"))
    view = page.locator("#view-itervar")
    assert view.evaluate("d => d.querySelector('svg').getBoundingClientRect().width <= d.clientWidth + 1")
    page.click(_button(page, "itervar", "1:1"))
    assert _zoom(page, "itervar") == 1.0
    box = view.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 50)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -120)
    page.keyboard.up("Control")
    assert _zoom(page, "itervar") == pytest.approx(1.25, abs=2e-3)
    page.click("#step-title")
    page.keyboard.press("ArrowLeft")  # the zoom chosen stays for the other steps
    assert _zoom(page, "itervar") == pytest.approx(1.25, abs=2e-3)
    page.keyboard.press("ArrowRight")
    assert page.problems == []


def test_drag_pans(page):
    page.click(_button(page, "tree", "1:1"))
    tree = page.locator("#view-tree")
    tree.evaluate("d => { d.scrollLeft = 0; }")
    box = tree.bounding_box()
    x, y = box["x"] + box["width"] - 40, box["y"] + 60
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 150, y, steps=5)
    page.mouse.up()
    assert tree.evaluate("d => d.scrollLeft") == pytest.approx(150, abs=3)


def _stage_box(page, name: str):
    k = next(k for k, n in page.data["schedules"][0]["steps"][-1]["stages"] if n == name)
    return page.locator(f"#stage-list input[data-stage='{k}']"), k


def test_collapse_stage_hides_what_it_encloses(page):
    page.click("#expand-all")
    before = page.eval_on_selector_all("#view-tree svg g", VISIBLE)
    box, k = _stage_box(page, "Y")
    box.check()
    after = page.eval_on_selector_all("#view-tree svg g", VISIBLE)
    assert after < before
    # Y.local is computed inside Y's loops: hidden with them; Y's own box stays
    assert page.eval_on_selector_all(f"#view-tree .tsl-in-{k}", VISIBLE) == 0
    head = page.locator("#view-tree g:has(> title:text-is('stage:Y'))")
    assert head.is_visible() and f"tsl-head-{k}" in head.get_attribute("class")
    assert page.locator("#view-tree g:has(title:text-is('stage:Y.local'))").is_hidden()
    page.click("#step-title")
    page.keyboard.press("ArrowLeft")  # the stage stays collapsed on the other steps
    assert _stage_box(page, "Y")[0].is_checked()
    page.keyboard.press("ArrowRight")
    # clicking the stage in the picture expands it again
    page.click(_button(page, "tree", "fit"))
    head.click()
    assert not _stage_box(page, "Y")[0].is_checked()
    assert page.eval_on_selector_all("#view-tree svg g", VISIBLE) == before
    page.click("#collapse-all")
    assert page.locator("#stage-list input:checked").count() == 12
    page.screenshot(path=str(page.shots / "scale_collapsed.png"), full_page=True)
    page.click("#expand-all")
    assert page.locator("#stage-list input:checked").count() == 0


def test_ir_search(page):
    ir = page.data["schedules"][0]["steps"][-1]["ir"]["lowered"]
    assert page.inner_text("#ir").strip() == ir.strip()  # the whole IR, nothing cut
    n = ir.lower().count("produce")
    page.fill("#ir-search", "PRODUCE")
    assert page.locator("#ir mark").count() == n > 3
    assert page.inner_text("#ir-hits") == f"1 of {n}"
    page.press("#ir-search", "Enter")
    assert page.inner_text("#ir-hits") == f"2 of {n}"
    page.press("#ir-search", "Shift+Enter")
    page.press("#ir-search", "Shift+Enter")
    assert page.inner_text("#ir-hits") == f"{n} of {n}"
    step = page.get_attribute("body", "data-step")
    page.press("#ir-search", "ArrowLeft")  # typing in the box never steps the history
    assert page.get_attribute("body", "data-step") == step
    page.fill("#ir-search", "no such text")
    assert page.inner_text("#ir-hits") == "no match"
    page.fill("#ir-search", "")
    assert page.locator("#ir mark").count() == 0
    assert page.problems == []


def test_ir_pane_resizes(page):
    side = page.locator("#side")
    w0 = side.bounding_box()["width"]
    bar = page.locator("#splitter").bounding_box()
    x, y = bar["x"] + bar["width"] / 2, bar["y"] + 100
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 300, y, steps=5)
    page.mouse.up()
    assert side.bounding_box()["width"] >= w0 + 250
    page.focus("#splitter")
    w1 = side.bounding_box()["width"]
    page.keyboard.press("ArrowRight")
    assert side.bounding_box()["width"] == pytest.approx(w1 - 40, abs=3)
    page.click("#ir-layout")  # the IR below the pictures, as wide as the page
    grid = page.locator("#grid").bounding_box()["width"]
    assert side.bounding_box()["width"] == pytest.approx(grid, abs=3)
    page.screenshot(path=str(page.shots / "scale_ir_below.png"), full_page=True)
    page.click("#ir-layout")
    assert page.problems == []
