"""The fuzzer's programs: small pipelines written as Python source, with their NumPy twins.

Each pipeline is built over a 2-D input with awkward sizes (1, 3, 7, 10, 13; now and then 17
or 33): elementwise maps, shifted window reads on a smaller output (``B[i+1] - B[i]``), a
transpose, a two-input sum of earlier results, padding, strides, upsampling, row and column
reductions (sum, max, or a sum under a ``where``), argmax, a matmul-like stage reading a
second input, 1-D convolutions and pools -- and, for the cross-feature fuzzer, the stages of
:mod:`.fuzz_features` (2-D stencils, reductions with ``init=``, recurrences, scans, in-place
stages). Sizes are symbolic now and then, bound from A's shape at call time.

Every step is a line of Python that is executed as it is written, so a failure is reported
as the exact program that reproduces it.
"""

from __future__ import annotations

import re

from ..errors import ScheduleError
from . import choices as st
from .fuzz_features import build_feature, feature_kinds

STAGE_NAMES = "BCDEFG"
SIZES = (1, 3, 7, 10, 13)
BIG = (17, 33)  # now and then: past a split factor of 16 and two vectors of 16 lanes
FACTORS = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)
DTYPES = ("float32",) * 6 + ("float64", "int32", "int16", "int8")


class Program:
    """A pipeline and a schedule, kept as Python source that is executed line by line."""

    def __init__(self):
        self.lines: list[str] = [
            "import numpy as np",
            "from tessel import te",
            "from tessel.testing import check, rand, refused",
        ]
        self.ns: dict = {}
        exec("\n".join(self.lines), self.ns)
        self.inputs: list[str] = []
        self.computed: list[str] = []  # tensor variable names, producer first
        self.shapes: dict[str, tuple[Dim, ...]] = {}
        self.outputs: list[str] = []
        self.helpers: list[str] = []  # stages a pipeline step made besides its result
        self.data_lines: list[str] = []
        self.symbolic: list[str] = []  # "N", "M": the sizes bound from A's shape at call time
        self.dtype = "float32"
        self.refs: dict[str, str] = {}  # tensor variable -> its NumPy value's variable
        self.reductions: set[str] = set()
        self.stage_names: list[str] = []  # variables naming every schedulable stage's tensor
        self.after_schedule: list[str] = []  # lines run right after create_schedule (store_in, assume)
        self.updated: dict[str, str] = {}  # input written in place -> its NumPy value afterwards
        self.in_place: set[str] = set()  # stages stored into an input
        self.sizes2: tuple[int, int] | None = None  # the second call's N, M (symbolic sizes)
        self.stats: dict = {}

    def run(self, line: str) -> None:
        exec(line, self.ns)
        self.lines.append(line)

    def data(self, line: str) -> None:
        """A line of the NumPy side (inputs and expected results), kept to be run again for
        other values of the symbolic sizes."""
        self.run(line)
        self.data_lines.append(line)

    def attempt(self, line: str, stats: dict | None = None) -> bool:
        """Run one schedule primitive. When tessel refuses it (ScheduleError) and proposes a fix,
        the fix is applied instead (it must then give the right values, as every accepted
        schedule must); a refusal without one is left out of the program."""
        stats = self.stats if stats is None else stats
        try:
            exec(line, self.ns)
        except ScheduleError as err:
            if not getattr(err, "fix", None):
                stats["refused"] = stats.get("refused", 0) + 1
                # kept, as a call that must be refused: a refusal that changed the schedule shows
                call = re.sub(r"^\w+ = ", "", line.splitlines()[0])
                self.lines.append(f"refused(lambda: {call})")
                return False
            self.apply_fix(err)
            stats["fixed"] = stats.get("fixed", 0) + 1
            return True
        except Exception:  # a bug: the program shows the line that raised it
            self.lines.append(line)
            raise
        self.lines.append(line)
        return True

    attempt_or_fix = attempt

    def apply_fix(self, err: ScheduleError) -> None:
        """Apply the code of a refusal's fix in a namespace of its own that binds the names it
        uses (``fix_names``, else the Python names of the stages' tensors) to the program's
        tensors, so that the program's own variables keep their meaning. A fix tessel proposes
        that it then refuses is a bug, reported as such."""
        names = dict(getattr(err, "fix_names", None) or {})
        if not names:
            from ..schedule.dataflow import py_name

            stages = self.ns["s"].stages  # a stage's name, and each of its outputs' names
            names = {py_name(st_.op.name): st_.op.output(0) for st_ in stages}
            names.update({py_name(t.name): t for st_ in stages for t in st_.op.outputs})
        bind = ["'s': s"]
        for k, t in names.items():
            if re.search(rf"\b{re.escape(k)}\b", err.fix):
                held = next((x for x, y in self.ns.items() if y is t), None)
                bind.append(f"{k!r}: {held}" if held else
                            f"{k!r}: next(t for st_ in s.stages for t in st_.op.outputs if t.name == {t.name!r})")
        line = f"exec({err.fix!r}, {{{', '.join(bind)}}})"
        self.lines.append(line)  # whatever it raises, the program shows it
        try:
            exec(line, self.ns)
        except ScheduleError as again:
            raise AssertionError(f"the fix tessel proposed was refused: {err.fix}\n  {again}\n"
                                 f"  proposed for: {err}") from None

    def source(self) -> str:
        return "\n".join(self.lines)


def _ew_expr(draw, x: str, is_int: bool) -> str:
    if is_int:  # division, modulo and comparisons only of loaded values: the reference wraps per stage
        return draw(st.sampled_from([
            f"{x} * 3 + 1",
            f"{x} * {x} - {x}",
            f"te.select({x} > 0, {x}, {x} // 4)",
            f"te.if_then_else({x} < 2, {x} + 5, {x} - 3)",
            f"{x} % 7 - {x} // 3",
        ]))
    return draw(st.sampled_from([
        f"{x} * 1.5 + 0.25",
        f"{x} * {x} * 0.5 - {x}",
        f"te.select({x} > 0.0, {x}, {x} * 0.125)",
        f"te.if_then_else({x} < 0.25, {x} + 1.0, {x} - 0.5)",
    ]))


def _np_ew(code: str) -> str:
    """The NumPy twin of an elementwise expression over the name ``x``."""
    return (code.replace("te.select(", "np.where(").replace("te.if_then_else(", "np.where("))


class Dim:
    """One dimension: its size in the program (a number, or an expression of ``n``/``m``), its
    value in this example, and that value as an expression of ``N``/``M`` (the values of
    ``n``/``m``) for the NumPy side, so the data can be made again for other sizes."""

    def __init__(self, text: str, value: int, expr: str | None = None):
        self.text, self.value = text, value
        self.expr = str(value) if expr is None else expr

    def _derive(self, text: str, value: int, expr: str) -> Dim:
        return Dim(str(value), value) if self.text.isdigit() else Dim(text, value, expr)

    def minus(self, w: int) -> Dim:
        return self.plus(-w)

    def plus(self, w: int) -> Dim:
        text = f"{self.text} + {w}" if w >= 0 else f"{self.text} - {-w}"
        return self._derive(text, self.value + w, f"({self.expr} + {w})")

    def times(self, f: int) -> Dim:
        return self._derive(f"({self.text}) * {f}", self.value * f, f"({self.expr} * {f})")

    def half_up(self) -> Dim:
        return self._derive(f"({self.text} + 1) // 2", (self.value + 1) // 2, f"(({self.expr} + 1) // 2)")

    def __eq__(self, other) -> bool:
        return isinstance(other, Dim) and (self.text, self.value) == (other.text, other.value)

    __hash__ = None


def _tuple(shape) -> str:
    return "(" + ", ".join(d.text for d in shape) + ("," if len(shape) == 1 else "") + ")"


def build_pipeline(draw, prog: Program, stages: tuple[int, int], features: bool = False, side: bool = False) -> None:
    """``features``: half the stages are :mod:`.fuzz_features`' (and symbolic sizes get
    ``s.assume`` now and then); ``side``: half the time one more output reads an earlier stage."""
    n0, n1 = (draw(st.sampled_from(SIZES if draw(st.integers(0, 6)) else BIG)) for _ in range(2))
    d0, d1 = Dim(str(n0), n0), Dim(str(n1), n1)
    # now and then symbolic sizes, bound from A's shape at call time
    sym = draw(st.sampled_from(["", "", "", "n", "nm"]))
    prog.data(f"N, M = {n0}, {n1}")
    if "n" in sym:
        prog.run("n = te.var('n')")
        d0 = Dim("n", n0, "N")
        prog.symbolic.append("N")
    if "m" in sym:
        prog.run("m = te.var('m')")
        d1 = Dim("m", n1, "M")
        prog.symbolic.append("M")
    dt = draw(st.sampled_from(DTYPES))
    prog.dtype = dt
    is_int = dt.startswith("int")

    def c(f: float, i: int) -> str:
        """A constant of the pipeline's type."""
        return str(i) if is_int else repr(f)

    prog.run(f"A = te.placeholder({_tuple((d0, d1))}, name='A', dtype='{dt}')")
    prog.data(f"a = rand({d0.expr}, {d1.expr}, dtype='{dt}')")
    prog.inputs.append("A")
    prog.shapes["A"] = (d0, d1)
    prog.refs["A"] = "a"
    cur, ref = "A", "a"
    nstages = draw(st.integers(*stages))
    for k in range(nstages):
        name = STAGE_NAMES[k]
        shape = prog.shapes[cur]
        kinds = ["ew", "transpose", "add2", "pad", "stride2", "upsample"]
        if len(shape) == 2:
            kinds += ["reduce", "matmul", "bcast"]
            if not is_int:
                kinds.append("argmax")
            kinds += ["colsum"]
            if shape[1].value >= 3:
                kinds += ["conv"]
            if shape[0].value >= 2 and shape[1].value >= 2:
                kinds += ["pool"]
        if any(d.value >= 2 for d in shape):
            kinds += ["shift", "shift"]
        kind = draw(st.sampled_from(kinds))
        if features and draw(st.booleans()) and feature_kinds(prog, cur, shape):
            kind = draw(st.sampled_from(feature_kinds(prog, cur, shape)))
        if kind == "add2":
            same = [t for t in prog.computed + prog.inputs
                    if t != cur and prog.shapes[t] == shape and t not in prog.updated]
            if not same:
                kind = "ew"
        r = f"r{name.lower()}"
        vs = "ij"[: len(shape)]
        idx = ", ".join(vs)
        if kind == "ew":
            e = _ew_expr(draw, "x", is_int)
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda {idx}: (lambda x: {e})({cur}[{idx}]), name='{name}')")
            prog.data(f"{r} = (lambda x: {_np_ew(e)})({ref})")
        elif kind == "transpose":
            if len(shape) == 2:
                shape = (shape[1], shape[0])
                prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i, j: {cur}[j, i] * {c(2.0, 2)} - {c(1.0, 1)}, name='{name}')")
                prog.data(f"{r} = {ref}.T * {c(2.0, 2)} - {c(1.0, 1)}")
            else:
                prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i: {cur}[{shape[0].text} - 1 - i] + {c(0.5, 2)}, name='{name}')")
                prog.data(f"{r} = {ref}[::-1] + {c(0.5, 2)}")
        elif kind == "add2":
            other = draw(st.sampled_from(same))
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda {idx}: {cur}[{idx}] - {other}[{idx}] * {c(0.5, 2)}, name='{name}')")
            prog.data(f"{r} = {ref} - {prog.refs[other]} * {c(0.5, 2)}")
        elif kind == "shift":
            d = draw(st.sampled_from([d for d in range(len(shape)) if shape[d].value >= 2]))
            w = draw(st.integers(1, min(2, shape[d].value - 1)))  # reads x, x+1 (.. x+w)
            out = list(shape)
            out[d] = shape[d].minus(w)
            terms, nterms = [], []
            for off in range(w + 1):
                ix = [f"{v} + {off}" if (p == d and off) else v for p, v in enumerate(vs)]
                sl = [f"{off}:{off} + {out[p].expr}" if p == d else ":" for p in range(len(shape))]
                k_ = c(*((1.0, 1), (-0.5, -2), (0.25, 3))[off])
                terms.append(f"{cur}[{', '.join(ix)}] * {k_}")
                nterms.append(f"{ref}[{', '.join(sl)}] * {k_}")
            shape = tuple(out)
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda {idx}: {' + '.join(terms)}, name='{name}')")
            prog.data(f"{r} = {' + '.join(nterms)}")
        elif kind == "pad":  # a zero border of p on one side or both: guarded reads outside the input
            d = draw(st.integers(0, len(shape) - 1))
            lo, hi = draw(st.sampled_from([(1, 1), (1, 0), (0, 2), (2, 1)]))
            out = list(shape)
            out[d] = shape[d].plus(lo + hi)
            v = vs[d]
            ix = [f"{x} - {lo}" if (p == d and lo) else x for p, x in enumerate(vs)]
            cond = f"te.all({v} >= {lo}, {v} < {shape[d].text} + {lo})"
            prog.run(f"{name} = te.compute({_tuple(out)}, lambda {idx}: te.if_then_else({cond}, {cur}[{', '.join(ix)}], {c(-0.75, -3)}), name='{name}')")
            widths = ", ".join(f"({lo}, {hi})" if p == d else "(0, 0)" for p in range(len(shape)))
            prog.data(f"{r} = np.pad({ref}, [{widths}], constant_values={c(-0.75, -3)})")
            shape = tuple(out)
        elif kind == "stride2":  # every other element: floordiv-free reads at 2*i
            d = draw(st.integers(0, len(shape) - 1))
            out = list(shape)
            out[d] = shape[d].half_up()
            ix = [f"{x} * 2" if p == d else x for p, x in enumerate(vs)]
            sl = ["::2" if p == d else ":" for p in range(len(shape))]
            prog.run(f"{name} = te.compute({_tuple(out)}, lambda {idx}: {cur}[{', '.join(ix)}] + {c(0.125, 1)}, name='{name}')")
            prog.data(f"{r} = {ref}[{', '.join(sl)}] + {c(0.125, 1)}")
            shape = tuple(out)
        elif kind == "upsample":  # each element twice: reads at i // 2
            d = draw(st.integers(0, len(shape) - 1))
            out = list(shape)
            out[d] = shape[d].times(2)
            ix = [f"{x} // 2" if p == d else x for p, x in enumerate(vs)]
            prog.run(f"{name} = te.compute({_tuple(out)}, lambda {idx}: {cur}[{', '.join(ix)}] * {c(0.75, 3)}, name='{name}')")
            prog.data(f"{r} = np.repeat({ref}, 2, axis={d}) * {c(0.75, 3)}")
            shape = tuple(out)
        elif kind == "conv":  # a 1-D convolution along the rows: a reduction over shifted reads
            n, m = shape
            w = draw(st.integers(2, min(3, m.value)))
            kv = f"k{name.lower()}"
            prog.run(f"{kv} = te.reduce_axis((0, {w}), name='{kv}')")
            shape = (n, m.minus(w - 1))
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i, j: te.sum({cur}[i, j + {kv}] * ({kv} + 1).astype('{dt}'), axis={kv}), name='{name}')")
            prog.data(f"{r} = sum({ref}[:, t:t + {shape[1].expr}] * (t + 1) for t in range({w}))")
            prog.reductions.add(name)
        elif kind == "pool":  # a 2x2 window sum: two reduction axes over shifted reads
            n, m = shape
            kv, kw = f"k{name.lower()}", f"l{name.lower()}"
            prog.run(f"{kv} = te.reduce_axis((0, 2), name='{kv}')")
            prog.run(f"{kw} = te.reduce_axis((0, 2), name='{kw}')")
            shape = (n.minus(1), m.minus(1))
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i, j: te.sum({cur}[i + {kv}, j + {kw}] * ({kv} * 2 + {kw} + 1).astype('{dt}'), axis=[{kv}, {kw}]), name='{name}')")
            prog.data(f"{r} = sum({ref}[t:t + {shape[0].expr}, u:u + {shape[1].expr}] * (t * 2 + u + 1) for t in range(2) for u in range(2))")
            prog.reductions.add(name)
        elif kind == "colsum":  # a reduction over the first axis: the reduction loop reads down columns
            n, m = shape
            kv = f"k{name.lower()}"
            prog.run(f"{kv} = te.reduce_axis((0, {n.text}), name='{kv}')")
            shape = (m,)
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i: te.sum({cur}[{kv}, i] * {c(0.5, 2)}, axis={kv}), name='{name}')")
            prog.data(f"{r} = ({ref} * {c(0.5, 2)}).sum(axis=0)")
            prog.reductions.add(name)
        elif kind == "reduce":
            how = draw(st.sampled_from(["sum", "max", "min", "where", "finished"]))
            n, m = shape
            kv = f"k{name.lower()}"
            prog.run(f"{kv} = te.reduce_axis((0, {m.text}), name='{kv}')")
            shape = (n,)
            if how == "sum":
                prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i: te.sum({cur}[i, {kv}] * {c(0.5, 2)}, axis={kv}), name='{name}')")
                prog.data(f"{r} = ({ref} * {c(0.5, 2)}).sum(axis=1)")
            elif how in ("max", "min"):
                prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i: te.{how}({cur}[i, {kv}], axis={kv}), name='{name}')")
                prog.data(f"{r} = {ref}.{how}(axis=1)")
            elif how == "where":
                prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i: te.sum({cur}[i, {kv}], axis={kv}, where={kv} % 3 != 1), name='{name}')")
                prog.data(f"{r} = ({ref} * (np.arange({m.expr}) % 3 != 1)).sum(axis=1)")
            else:  # a value finished after its reduction: (sum) * c + a read of another tensor
                prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i: te.sum({cur}[i, {kv}], axis={kv}) * {c(0.5, 2)} + {cur}[i, 0], name='{name}')")
                prog.data(f"{r} = {ref}.sum(axis=1) * {c(0.5, 2)} + {ref}[:, 0]")
            prog.reductions.add(name)
        elif kind == "bcast":  # softmax's first step: a row maximum, read back along the row
            n, m = shape
            kv, h = f"k{name.lower()}m", f"{name}m"
            prog.run(f"{kv} = te.reduce_axis((0, {m.text}), name='{kv}')")
            prog.run(f"{h} = te.compute(({n.text},), lambda i: te.max({cur}[i, {kv}], axis={kv}), name='{h}')")
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i, j: {cur}[i, j] - {h}[i], name='{name}')")
            prog.data(f"{r} = {ref} - {ref}.max(axis=1, keepdims=True)")
            prog.helpers.append(h)
        elif kind == "argmax":  # a reduction with two outputs; the next stage reads the value
            n, m = shape
            kv = f"k{name.lower()}"
            prog.run("argmax = te.comm_reducer(lambda x, y: (te.select(x[1] >= y[1], x[0], y[0]), "
                     "te.select(x[1] >= y[1], x[1], y[1])), lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), "
                     "name='argmax')")
            prog.run(f"{kv} = te.reduce_axis((0, {m.text}), name='{kv}')")
            shape = (n,)
            prog.run(f"{name}i, {name} = te.compute({_tuple(shape)}, lambda i: argmax(({kv}.var, {cur}[i, {kv}]), axis={kv}), name='{name}')")
            prog.data(f"{r} = {ref}.max(axis=1)")
            prog.reductions.add(name)
        elif kind == "matmul":
            n, kk = shape
            mv = draw(st.sampled_from(SIZES))
            w = f"W{name}"
            prog.run(f"{w} = te.placeholder(({kk.text}, {mv}), name='{w}', dtype='{dt}')")
            prog.data(f"w{name.lower()} = rand({kk.expr}, {mv}, seed={k + 1}, dtype='{dt}')")
            prog.inputs.append(w)
            prog.shapes[w] = (kk, Dim(str(mv), mv))
            prog.refs[w] = f"w{name.lower()}"
            kv = f"k{name.lower()}"
            shape = (n, Dim(str(mv), mv))
            prog.run(f"{kv} = te.reduce_axis((0, {kk.text}), name='{kv}')")
            prog.run(f"{name} = te.compute({_tuple(shape)}, lambda i, j: te.sum({cur}[i, {kv}] * {w}[{kv}, j], axis={kv}), name='{name}')")
            acc = "np.int64" if is_int else "np.float64"
            prog.data(f"{r} = {ref}.astype({acc}) @ w{name.lower()}.astype({acc})")
            prog.reductions.add(name)
        else:
            shape = build_feature(draw, prog, kind, name, cur, ref, shape, c)
        prog.data(f"{r} = np.asarray({r}).astype(np.{dt})")  # wraps around like the kernel's integers
        prog.shapes[name] = shape
        prog.refs[name] = r
        prog.computed.append(name)
        cur, ref = name, r
    prog.outputs = [cur]
    if len(prog.computed) >= 2 and draw(st.integers(0, 5)) == 0:  # an intermediate result is an output too
        prog.outputs.insert(0, draw(st.sampled_from(prog.computed[:-1])))
    sources = [t for t in prog.computed[:-1] if t not in prog.in_place]
    if side and sources and draw(st.booleans()):
        prog.outputs.append(_side_reader(draw, prog, sources, is_int))
    prog.run(f"s = te.create_schedule([{', '.join(t + '.op' for t in prog.outputs)}])")
    prog.outputs = [t for t in prog.outputs if t not in prog.in_place]  # their values are the input's
    prog.stage_names = prog.computed + prog.helpers
    if features:
        _second_sizes_and_assumptions(draw, prog)
    for line in prog.after_schedule:
        prog.run(line)


def _side_reader(draw, prog: Program, sources: list[str], is_int: bool) -> str:
    """One more output, reading an earlier stage: that stage has two readers with no common
    consumer, which is where a position primitive must decide what happens to the reader it
    does not move (issue 29: a row sum beside another reduction, a map beside a broadcast)."""
    src = draw(st.sampled_from(sources))
    shape, ref = prog.shapes[src], prog.refs[src]
    if len(shape) == 2 and draw(st.booleans()):
        n, m = shape
        prog.run(f"kz = te.reduce_axis((0, {m.text}), name='kz')")
        prog.run(f"Z = te.compute(({n.text},), lambda i: te.sum({src}[i, kz], axis=kz), name='Z')")
        prog.data(f"rz = np.asarray({ref}.sum(axis=1)).astype(np.{prog.dtype})")
        prog.reductions.add("Z")
        shape = (n,)
    else:
        idx = ", ".join("ij"[: len(shape)])
        k = "3" if is_int else "1.5"
        prog.run(f"Z = te.compute({_tuple(shape)}, lambda {idx}: {src}[{idx}] * {k}, name='Z')")
        prog.data(f"rz = np.asarray({ref} * {k}).astype(np.{prog.dtype})")
    prog.shapes["Z"], prog.refs["Z"] = shape, "rz"
    prog.computed.append("Z")
    return "Z"


def _second_sizes_and_assumptions(draw, prog: Program) -> None:
    """The sizes of the second call (larger, so every stage keeps a shape), and now and then an
    ``s.assume`` that both calls' sizes satisfy."""
    n, m = prog.ns["N"], prog.ns["M"]
    prog.sizes2 = tuple(v + draw(st.sampled_from([0, 1, 4, 16])) if k in prog.symbolic else v
                        for k, v in (("N", n), ("M", m)))
    for var, k, v, v2 in (("n", "N", n, prog.sizes2[0]), ("m", "M", m, prog.sizes2[1])):
        if k in prog.symbolic and draw(st.integers(0, 2)) == 0:
            facts = [f"{var} >= {min(v, v2)}", f"{var} >= 1"]
            if v % 2 == v2 % 2:
                facts.append(f"{var} % 2 == {v % 2}")
            prog.after_schedule.append(f"s.assume({draw(st.sampled_from(facts))!r})")


