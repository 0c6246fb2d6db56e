"""The explorer's page: markup, style and script, with ``__TITLE__`` and ``__DATA__`` to fill.

Kept apart from the Python that computes the data so each can be read on its own. The script
only displays what Python computed (views, bounds, IR, errors) and computes one thing itself:
the line diff between the IR of two steps the user picks, so any pair can be compared without
storing every pair's diff in the file.
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<link rel="icon" href="data:,">
<style>
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; background: #f4f5f7; }
  header { position: sticky; top: 0; z-index: 2; display: flex; gap: 10px; align-items: center; padding: 8px 14px;
           background: #263238; color: #fff; }
  header h1 { font-size: 16px; margin: 0 12px 0 0; font-weight: 600; }
  header button { font-size: 14px; padding: 2px 10px; cursor: pointer; }
  header .hint { color: #b0bec5; font-size: 12px; margin-left: auto; }
  #layout { display: flex; align-items: flex-start; }
  nav { width: 330px; flex: none; position: sticky; top: 44px; max-height: calc(100vh - 44px); overflow-y: auto;
        background: #fff; border-right: 1px solid #ddd; }
  nav ol { list-style: none; margin: 0; padding: 0; }
  nav li { padding: 6px 10px; border-bottom: 1px solid #eee; cursor: pointer; font: 12px/1.35 monospace; }
  nav li:hover { background: #eef3f8; }
  nav li.current { background: #d6e6f5; border-left: 4px solid #1e6fb8; padding-left: 6px; }
  nav li .where { color: #777; display: block; }
  .badge { display: inline-block; font: 600 10px system-ui, sans-serif; padding: 0 5px; border-radius: 8px; margin-left: 4px;
           vertical-align: 1px; }
  .badge.illegal, .badge.error { background: #c62828; color: #fff; }
  .badge.failed { background: #ef6c00; color: #fff; }
  .badge.legal { background: #2e7d32; color: #fff; }
  main { flex: 1; min-width: 0; padding: 12px 16px 40px; }
  section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; margin-bottom: 12px; }
  h2 { font-size: 14px; margin: 4px 0 8px; }
  h3 { font-size: 13px; margin: 8px 0 4px; }
  pre { font: 12px/1.4 monospace; background: #f7f7f9; border: 1px solid #e3e3e8; border-radius: 4px; padding: 8px;
        margin: 4px 0; overflow-x: auto; white-space: pre; }
  #step-title { font: 600 15px monospace; }
  #where, #result { color: #555; font-size: 12px; }
  #result { white-space: pre-line; }
  .note { border-left: 5px solid #c62828; background: #fdecea; padding: 8px 12px; margin: 6px 0; border-radius: 4px; }
  .note.failed { border-color: #ef6c00; background: #fff3e0; }
  .note.legal { border-color: #2e7d32; background: #e8f5e9; }
  .note pre { background: #fff; white-space: pre-wrap; }
  #grid { display: grid; grid-template-columns: minmax(0, 3fr) 8px minmax(0, 2fr); gap: 4px; align-items: start; }
  #grid.stacked { grid-template-columns: minmax(0, 1fr) !important; }
  #grid.stacked #splitter { display: none; }
  #splitter { align-self: stretch; min-height: 200px; cursor: col-resize; border-radius: 4px; background: #dde2e8; }
  #splitter:hover, #splitter:focus, #splitter.dragging { background: #90a4ae; outline: none; }
  .view { overflow: auto; max-height: 72vh; cursor: grab; border: 1px solid #eee; border-radius: 4px; }
  .view.panning { cursor: grabbing; user-select: none; }
  .view svg { display: block; max-width: none; }
  .tools { float: right; font: 12px system-ui, sans-serif; font-weight: normal; }
  .tools button { font-size: 12px; padding: 0 6px; min-width: 24px; cursor: pointer; }
  .tools .zlabel { display: inline-block; min-width: 44px; text-align: right; color: #555; }
  #stage-list label { display: inline-block; margin: 2px 10px 2px 0; font: 12px monospace; cursor: pointer; }
  #ir { max-height: 72vh; overflow: auto; resize: vertical; }
  #ir mark { background: #fff59d; }
  #ir mark.current { background: #ff9800; color: #000; }
  #ir-search { font: 12px monospace; width: 16em; }
  #ir-hits { font: 12px system-ui, sans-serif; color: #555; font-weight: normal; }
  table { border-collapse: collapse; font: 12px monospace; width: 100%; }
  th, td { border-bottom: 1px solid #eee; padding: 2px 6px; text-align: left; }
  th { background: #fafafa; }
  .add { background: #e6ffec; display: block; }
  .del { background: #ffebe9; display: block; }
  .same { color: #666; display: block; }
  .muted { color: #777; font-size: 12px; }
</style>
</head>
<body>
<header>
  <h1>__TITLE__</h1>
  <select id="schedule" aria-label="schedule"></select>
  <button id="prev" title="previous step (left arrow)">&#9664;</button>
  <span id="position"></span>
  <button id="next" title="next step (right arrow)">&#9654;</button>
  <button id="ir-layout" title="put the IR beside the pictures or below them">IR below</button>
  <span class="hint">&larr; / &rarr; step through the history &middot; click a step to jump to it &middot;
    drag a picture to pan, Ctrl + wheel to zoom, click a stage to collapse it</span>
</header>
<div id="layout">
  <nav><ol id="steps"></ol></nav>
  <main>
    <section id="call">
      <div id="step-title"></div>
      <pre id="code"></pre>
      <div id="where"></div>
      <div id="result"></div>
      <div id="problem"></div>
    </section>
    <section id="stages-panel">
      <h2>Stages <span class="tools"><button id="expand-all">expand all</button>
        <button id="collapse-all">collapse all</button></span></h2>
      <div class="muted">a collapsed stage keeps its own box and hides its loops and what is computed inside them</div>
      <div id="stage-list"></div>
    </section>
    <div id="grid">
      <div id="views"></div>
      <div id="splitter" role="separator" aria-orientation="vertical" aria-label="resize the IR pane" tabindex="0"
           title="drag (or focus and press the arrow keys) to resize; double-click to reset"></div>
      <div id="side">
        <section>
          <h2>Lowered IR
            <select id="ir-kind" aria-label="IR">
              <option value="lowered">after all passes</option>
              <option value="schedule_ops">after ScheduleOps</option>
              <option value="poly">polyhedral model</option>
            </select>
            <span class="tools"><input id="ir-search" type="search" placeholder="search (Enter: next)"
              aria-label="search the IR"> <span id="ir-hits"></span></span></h2>
          <pre id="ir"></pre>
        </section>
        <section>
          <h2>IR diff between steps</h2>
          <div>from <select id="diff-a" aria-label="from step"></select>
               to <select id="diff-b" aria-label="to step"></select></div>
          <pre id="diff"></pre>
        </section>
        <section>
          <h2>Bounds (InferBound)</h2>
          <div id="bounds-note" class="muted"></div>
          <table><thead><tr><th>stage</th><th>IterVar</th><th>role</th><th>min</th><th>extent</th></tr></thead>
            <tbody id="bounds"></tbody></table>
        </section>
        <section>
          <h2>Dependences (polyhedral model)</h2>
          <div id="deps-note" class="muted"></div>
          <table><thead><tr><th>kind</th><th>from</th><th>to</th><th>through</th><th>example</th><th>carried by</th></tr></thead>
            <tbody id="deps"></tbody></table>
        </section>
      </div>
    </div>
  </main>
</div>
<style id="collapse-style"></style>
<script type="application/json" id="data">__DATA__</script>
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var sched = 0, cur = 0, zoom = {}, collapsed = {}, irText = "", hit = 0;
  var MIN_AUTO = 0.75;  // never shrink a picture below this on its own: past it, pan instead
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function steps() { return data.schedules[sched].steps; }

  function badges(st) {
    var out = [];
    if (st.call_error) out.push(["failed", "call failed"]);
    if (st.state === "illegal") out.push(["illegal", st.transition === "made illegal" ? "made illegal" : "illegal"]);
    if (st.state === "error") out.push(["error", "lowering failed"]);
    if (st.transition === "made legal") out.push(["legal", "legal again"]);
    return out;
  }

  function buildList() {
    var ol = $("steps"), a = $("diff-a"), b = $("diff-b");
    ol.textContent = ""; a.textContent = ""; b.textContent = "";
    steps().forEach(function (st, k) {
      var li = el("li");
      li.dataset.index = k;
      li.appendChild(document.createTextNode(st.index + ". " + st.call));
      badges(st).forEach(function (bd) { li.appendChild(el("span", "badge " + bd[0], bd[1])); });
      li.appendChild(el("span", "where", st.where.split("/").pop()));
      li.addEventListener("click", function () { show(k); });
      ol.appendChild(li);
      a.appendChild(new Option("step " + st.index, k));
      b.appendChild(new Option("step " + st.index, k));
    });
  }

  function note(cls, title, err) {
    var box = el("div", "note " + cls);
    box.appendChild(el("h3", null, title));
    if (err) {
      var repeats = err.explanation && err.message.indexOf(err.explanation) >= 0;
      box.appendChild(el("pre", "message", repeats ? err.type : err.type + ": " + err.message));
      if (err.explanation) { box.appendChild(el("h3", null, "Why")); box.appendChild(el("pre", "explanation", err.explanation)); }
      if (err.fix) { box.appendChild(el("h3", null, "Proposed fix")); box.appendChild(el("pre", "fix", err.fix)); }
    }
    return box;
  }

  function renderProblem(st) {
    var p = $("problem");
    p.textContent = "";
    if (st.call_error) p.appendChild(note("failed", "This call raised an error (the schedule is unchanged)", st.call_error));
    if (st.state === "illegal") {
      var t = st.transition === "made illegal" ? "This step made the schedule illegal" : "The schedule is still illegal";
      p.appendChild(note("illegal", t, st.problem));
    } else if (st.state === "error") {
      p.appendChild(note("illegal", "The schedule cannot be lowered", st.problem));
    } else if (st.state === "unknown" && st.problem) {
      p.appendChild(note("failed", "No snapshot of the schedule at this step", st.problem));
    }
    if (st.transition === "made legal") p.appendChild(note("legal", "This step made the schedule legal again", null));
  }

  function natural(svg) {
    // Graphviz sizes in points, tessel's own drawing in pixels
    function px(v) { var x = parseFloat(v || "0"); return /pt$/.test(v || "") ? x * 4 / 3 : x; }
    return { w: px(svg.getAttribute("width")), h: px(svg.getAttribute("height")) };
  }

  function applyZoom(key) {
    var div = $("view-" + key), svg = div && div.querySelector("svg");
    if (!svg) return;
    var n = natural(svg);
    if (!n.w || !n.h) return;
    var fit = Math.min(1, Math.max(div.clientWidth - 2, 50) / n.w);
    var z = zoom[key] === undefined ? Math.max(fit, MIN_AUTO) : zoom[key] === "fit" ? fit : zoom[key];
    svg.style.width = (n.w * z).toFixed(1) + "px";
    svg.style.height = (n.h * z).toFixed(1) + "px";
    div.dataset.zoom = z.toFixed(3);
    var label = $("zoom-" + key);
    if (label) label.textContent = Math.round(z * 100) + "%";
  }

  function setZoom(key, value, at) {
    var div = $("view-" + key), before = +(div.dataset.zoom || 1);
    var z = value === "in" ? before * 1.25 : value === "out" ? before / 1.25 : value;
    zoom[key] = typeof z === "number" ? Math.min(4, Math.max(0.1, z)) : z;
    var px = at ? at.x : div.clientWidth / 2, py = at ? at.y : div.clientHeight / 2;
    var cx = div.scrollLeft + px, cy = div.scrollTop + py;
    applyZoom(key);
    var r = +div.dataset.zoom / before;  // keep the point under the cursor where it was
    div.scrollLeft = cx * r - px;
    div.scrollTop = cy * r - py;
  }

  function tool(text, title, fn) {
    var b = el("button", null, text);
    b.title = title;
    b.addEventListener("click", fn);
    return b;
  }

  var drag = null;  // one drag at a time, on whichever picture it started
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; drag.div.classList.add("panning"); }
    drag.div.scrollLeft = drag.l - dx;
    drag.div.scrollTop = drag.t - dy;
  });
  window.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var moved = drag.moved;
    drag.div.classList.remove("panning");
    drag = null;
    if (!moved) toggleFromPicture(e.target);
  });

  function panAndZoom(div, key) {
    div.addEventListener("mousedown", function (e) {
      if (e.button !== 0) return;
      drag = { div: div, x: e.clientX, y: e.clientY, l: div.scrollLeft, t: div.scrollTop, moved: false };
      e.preventDefault();
    });
    div.addEventListener("wheel", function (e) {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      var r = div.getBoundingClientRect();
      setZoom(key, e.deltaY < 0 ? "in" : "out", { x: e.clientX - r.left, y: e.clientY - r.top });
    }, { passive: false });
  }

  function renderViews(st) {
    var box = $("views");
    box.textContent = "";
    data.views.forEach(function (v) {
      var key = v[0], sec = el("section"), h = el("h2", null, v[1]), tools = el("span", "tools");
      tools.appendChild(tool("\u2212", "zoom out", function () { setZoom(key, "out"); }));
      tools.appendChild(tool("+", "zoom in", function () { setZoom(key, "in"); }));
      tools.appendChild(tool("fit", "fit the width", function () { setZoom(key, "fit"); }));
      tools.appendChild(tool("1:1", "full size", function () { setZoom(key, 1); }));
      var label = el("span", "zlabel");
      label.id = "zoom-" + key;
      tools.appendChild(label);
      h.appendChild(tools);
      sec.appendChild(h);
      var div = el("div", "view");
      div.id = "view-" + key;
      if (st.views[key] !== undefined) div.innerHTML = data.svgs[st.views[key]];
      else div.appendChild(el("span", "muted", "not available at this step"));
      panAndZoom(div, key);
      sec.appendChild(div);
      box.appendChild(sec);
    });
    data.views.forEach(function (v) { applyZoom(v[0]); });
    var tree = $("view-tree");  // the root sits at the top in the middle: start there
    if (tree) tree.scrollLeft = (tree.scrollWidth - tree.clientWidth) / 2;
  }

  // ---- stages: collapsed by name, so the choice follows a stage from step to step
  function stageOf(node) {
    for (; node && node.getAttribute; node = node.parentNode) {
      var m = /(?:^|\s)tsl-head-(\d+)(?:\s|$)/.exec(node.getAttribute("class") || "");
      if (m) return +m[1];
    }
    return null;
  }

  function toggleFromPicture(target) {
    var k = stageOf(target), st = steps()[cur];
    if (k === null || !st.stages) return;
    var found = st.stages.filter(function (p) { return p[0] === k; })[0];
    if (!found) return;
    collapsed[found[1]] = !collapsed[found[1]];
    renderStages(st);
  }

  function renderStages(st) {
    var list = $("stage-list"), rules = [];
    list.textContent = "";
    (st.stages || []).forEach(function (p) {
      var k = p[0], name = p[1], lab = el("label"), box = el("input");
      box.type = "checkbox";
      box.checked = !!collapsed[name];
      box.dataset.stage = k;
      box.addEventListener("change", function () { collapsed[name] = box.checked; renderStages(st); });
      lab.appendChild(box);
      lab.appendChild(document.createTextNode(" " + name));
      list.appendChild(lab);
      if (collapsed[name]) {
        rules.push("#views .tsl-in-" + k + " { display: none; }");
        rules.push("#views .tsl-head-" + k + " > rect, #views .tsl-head-" + k + " > path { stroke: #1e6fb8; "
                   + "stroke-width: 3px; stroke-dasharray: 6 3; }");
      }
    });
    $("collapse-style").textContent = rules.join("\n");
  }

  function setAll(value) {
    (steps()[cur].stages || []).forEach(function (p) { collapsed[p[1]] = value; });
    renderStages(steps()[cur]);
  }

  function irOf(st) { return st.ir[$("ir-kind").value]; }

  function renderIR(st) {
    var text = irOf(st);
    irText = text !== undefined ? text : "(no IR: " + (st.problem ? st.problem.type + ": " + st.problem.message : "not lowered") + ")";
    renderSearch(false);
  }

  function renderSearch(reveal) {
    var pre = $("ir"), q = $("ir-search").value, low = irText.toLowerCase(), needle = q.toLowerCase();
    pre.textContent = "";
    if (!q) { pre.textContent = irText; $("ir-hits").textContent = ""; return; }
    var at = 0, found, marks = [];
    while ((found = low.indexOf(needle, at)) >= 0) {
      pre.appendChild(document.createTextNode(irText.slice(at, found)));
      marks.push(pre.appendChild(el("mark", null, irText.slice(found, found + q.length))));
      at = found + q.length;
    }
    pre.appendChild(document.createTextNode(irText.slice(at)));
    if (!marks.length) { $("ir-hits").textContent = "no match"; return; }
    hit = ((hit % marks.length) + marks.length) % marks.length;
    marks[hit].className = "current";
    $("ir-hits").textContent = (hit + 1) + " of " + marks.length;
    if (reveal) {
      var top = marks[hit].offsetTop - pre.offsetTop;
      if (top < pre.scrollTop || top > pre.scrollTop + pre.clientHeight - 20) pre.scrollTop = Math.max(0, top - 40);
    }
  }


  function renderBounds(st) {
    var body = $("bounds");
    body.textContent = "";
    st.bounds.forEach(function (row) {
      var tr = el("tr");
      row.forEach(function (c) { tr.appendChild(el("td", null, c)); });
      body.appendChild(tr);
    });
    $("bounds-note").textContent = st.bounds_note || "";
  }

  function renderDeps(st) {
    var body = $("deps");
    body.textContent = "";
    (st.deps || []).forEach(function (row) {
      var tr = el("tr");
      row.forEach(function (c) { tr.appendChild(el("td", null, c)); });
      body.appendChild(tr);
    });
    $("deps-note").textContent = st.deps_note || "";
  }

  function diffLines(a, b) {
    var n = a.length, m = b.length, i, j, dp = [];
    for (i = 0; i <= n; i++) dp.push(new Int32Array(m + 1));
    for (i = n - 1; i >= 0; i--)
      for (j = m - 1; j >= 0; j--)
        dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    var out = [];
    i = 0; j = 0;
    while (i < n && j < m) {
      if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
      else if (dp[i + 1][j] >= dp[i][j + 1]) { out.push(["-", a[i]]); i++; }
      else { out.push(["+", b[j]]); j++; }
    }
    while (i < n) out.push(["-", a[i++]]);
    while (j < m) out.push(["+", b[j++]]);
    return out;
  }

  function renderDiff() {
    var sa = steps()[+$("diff-a").value], sb = steps()[+$("diff-b").value], pre = $("diff");
    pre.textContent = "";
    var ta = irOf(sa), tb = irOf(sb);
    if (ta === undefined || tb === undefined) {
      pre.textContent = "step " + (ta === undefined ? sa.index : sb.index) + " has no lowered IR to compare";
      return;
    }
    var rows = diffLines(ta.split("\n"), tb.split("\n"));
    var changed = rows.some(function (r) { return r[0] !== " "; });
    if (!changed) { pre.textContent = "(the IR is the same at both steps)"; return; }
    rows.forEach(function (r) {
      pre.appendChild(el("span", r[0] === "+" ? "add" : r[0] === "-" ? "del" : "same", r[0] + " " + r[1]));
    });
  }

  function show(k) {
    var list = steps();
    if (k < 0 || k >= list.length) return;
    cur = k;
    var st = list[k];
    document.body.dataset.step = k;
    $("position").textContent = "step " + st.index + " of " + (list.length - 1);
    Array.prototype.forEach.call($("steps").children, function (li, i) {
      li.classList.toggle("current", i === k);
      if (i === k && li.scrollIntoView) li.scrollIntoView({ block: "nearest" });
    });
    $("step-title").textContent = "Step " + st.index + ": " + st.call;
    $("code").textContent = st.code || "(source line not available)";
    $("where").textContent = "at " + st.where;
    $("result").textContent = (st.result ? "returned " + st.result : "") + (st.positions ? "\n" + st.positions : "");
    renderProblem(st);
    renderStages(st);
    renderViews(st);
    renderIR(st);
    renderBounds(st);
    renderDeps(st);
    var from = k - 1;  // compare with the closest earlier step that has IR
    while (from > 0 && irOf(list[from]) === undefined) from--;
    $("diff-a").value = String(Math.max(from, 0));
    $("diff-b").value = String(k);
    renderDiff();
  }

  function splitter() {
    var bar = $("splitter"), grid = $("grid"), dragging = false;
    function place(left) {
      var w = grid.getBoundingClientRect().width;
      left = Math.max(200, Math.min(w - 220, left));
      grid.style.gridTemplateColumns = left.toFixed(0) + "px 8px minmax(0, 1fr)";
      data.views.forEach(function (v) { applyZoom(v[0]); });
    }
    bar.addEventListener("mousedown", function (e) { dragging = true; bar.classList.add("dragging"); e.preventDefault(); });
    window.addEventListener("mousemove", function (e) {
      if (dragging) place(e.clientX - grid.getBoundingClientRect().left);
    });
    window.addEventListener("mouseup", function () { dragging = false; bar.classList.remove("dragging"); });
    bar.addEventListener("dblclick", function () {
      grid.style.gridTemplateColumns = "";
      data.views.forEach(function (v) { applyZoom(v[0]); });
    });
    bar.addEventListener("keydown", function (e) {
      var now = $("views").getBoundingClientRect().width;
      if (e.key === "ArrowLeft") { place(now - 40); e.preventDefault(); }
      else if (e.key === "ArrowRight") { place(now + 40); e.preventDefault(); }
    });
  }

  var sel = $("schedule");

  data.schedules.forEach(function (s, k) { sel.appendChild(new Option(s.label, k)); });
  sel.hidden = data.schedules.length < 2;
  sel.addEventListener("change", function () { sched = +sel.value; buildList(); show(0); sel.blur(); });
  $("prev").addEventListener("click", function () { show(cur - 1); });
  $("next").addEventListener("click", function () { show(cur + 1); });
  $("ir-kind").addEventListener("change", function () { renderIR(steps()[cur]); renderDiff(); });
  $("ir-search").addEventListener("input", function () { hit = 0; renderSearch(true); });
  $("ir-search").addEventListener("keydown", function (e) {
    if (e.key === "Enter") { hit += e.shiftKey ? -1 : 1; renderSearch(true); e.preventDefault(); }
  });
  $("expand-all").addEventListener("click", function () { setAll(false); });
  $("collapse-all").addEventListener("click", function () { setAll(true); });
  $("ir-layout").addEventListener("click", function () {
    var stacked = $("grid").classList.toggle("stacked");
    $("ir-layout").textContent = stacked ? "IR beside" : "IR below";
    data.views.forEach(function (v) { applyZoom(v[0]); });
  });
  splitter();
  window.addEventListener("resize", function () { data.views.forEach(function (v) { applyZoom(v[0]); }); });
  $("diff-a").addEventListener("change", renderDiff);

  $("diff-b").addEventListener("change", renderDiff);
  document.addEventListener("keydown", function (e) {
    if (e.target && /^(SELECT|INPUT|TEXTAREA)$/.test(e.target.tagName)) return;
    if (e.target && e.target.id === "splitter") return;
    if (e.key === "ArrowRight") { show(cur + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { show(cur - 1); e.preventDefault(); }
    else if (e.key === "Home") { show(0); e.preventDefault(); }
    else if (e.key === "End") { show(steps().length - 1); e.preventDefault(); }
  });
  buildList();
  show(0);
})();
</script>
</body>
</html>
"""
