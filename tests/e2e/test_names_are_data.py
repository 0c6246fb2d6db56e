"""Names are data (issue 10, items 1, 2, 4, 12): whatever string a user gives as a name, the
generated C and Python only ever show it in an escaped comment or spell it as an identifier,
so nothing in a name runs, and the kernel still computes the right values."""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tessel
from tessel import te
from tessel.errors import BuildError, DefinitionError


def _c_payload(marker) -> str:
    """Code that creates ``marker`` when a library holding it is loaded."""
    return (f'__attribute__((constructor)) static void tsl_pwn(void) {{ extern int system(const char*); '
            f'system("touch {marker}"); }}')


def _check(f, n=4):
    a = np.random.default_rng(n).uniform(-2, 2, n).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 2.0 + 1.0, rtol=1e-6)


def _build(target="c", a="A", b="B", var=None, tag=None, kernel="main"):
    n = te.var(var) if var is not None else 4
    A = te.placeholder((n,), name=a)
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name=b)
    s = te.create_schedule(B.op)
    if tag is not None:
        xo, _ = s[B].split(B.op.axis[0], 2)
        s[B].bind(xo, te.thread_axis(tag))
    return tessel.build(s, [A, B], target=target, name=kernel)


@pytest.mark.parametrize("where", ["placeholder", "stage", "var", "thread_tag"])
@pytest.mark.parametrize("target", ["c", "python"])
def test_a_name_with_line_breaks_is_never_compiled_as_code(tmp_path, where, target):
    marker = tmp_path / "pwned"
    if target == "c":
        evil = f"X\n{_c_payload(marker)}\n//"
    else:
        evil = f"X\n    __import__('os').system('touch {marker}')\n    #"
    key = {"placeholder": "a", "stage": "b", "var": "var", "thread_tag": "tag"}[where]
    f = _build(target, **{key: evil})
    if where == "var":
        _check(f, 7)
    else:
        _check(f)
    assert not marker.exists(), f"a {where} name ran code on the {target} target"
    if target == "c":  # the name is in comments only, whole
        code = [line for line in f.source.splitlines() if not line.lstrip().startswith("//")]
        assert not any("system" in line for line in code)
    else:  # the name is in comments and string literals only
        calls = [n.func for n in ast.walk(ast.parse(f.source)) if isinstance(n, ast.Call)]
        assert not any(getattr(c, "id", getattr(c, "attr", "")) in ("system", "__import__") for c in calls)


def test_python_output_stage_name_from_the_issue_does_not_run(tmp_path):
    marker = tmp_path / "pwned"
    f = _build("python", b=f"B\n    __import__('os').system('touch {marker}')\n    #")
    _check(f)
    assert not marker.exists()


@pytest.mark.parametrize("target", ["c", "python"])
@pytest.mark.parametrize("name", ["B\\", "B\\ ", "B??/", "B */ x", "B\r", "B\u2028", "B\x0c"])
def test_a_name_ending_in_a_backslash_does_not_swallow_the_next_line(target, name):
    f = _build(target, b=name)
    _check(f)  # the store after the `// produce` comment is there and runs


@pytest.mark.parametrize("target", ["c", "python"])
def test_unpaired_surrogates_in_names_build(target):
    f = _build(target, a="A\ud800", b="B\udfff\ud83d", var="n\udc80", tag="threadIdx.\ud800")
    _check(f, 9)
    f.source.encode("utf-8")  # the generated text is valid UTF-8: every surrogate was escaped


@pytest.mark.parametrize("target", ["c", "python"])
@pytest.mark.parametrize("name", ["linux", "unix", "M_PI", "HUGE_VAL", "INT32_MAX", "main", "signbit",
                                  "errno", "NULL", "int", "for", "None", "np", "float32", "tsl_nt",
                                  "omp_get_max_threads", "__x", "_Bool", "1x", "", "x" * 5000])
def test_names_that_are_keywords_or_macros_of_the_generated_language(target, name):
    f = _build(target, a=name, b=name, var=name, tag=name, kernel="main")
    _check(f, 6)
    # path-safety of build(name=) is covered in tests/runtime/test_hardening_*: a short name here
    g = _build(target, b="B", kernel=name[:64] or "k")
    _check(g)


def test_identifier_is_ascii_and_never_a_keyword_or_reserved():
    from tessel.ir.names import identifier

    assert identifier("i.outer") == "i_outer" and identifier("A") == "A"
    assert identifier("for") == "for_" and identifier("for", "python") == "for_"
    assert identifier("None", "python") == "None_" and identifier("None", "c") == "None"
    assert identifier("__init__") == "init___" and identifier("_") == "v" and identifier("") == "v"
    assert identifier("3d") == "v_3d" and identifier("a\nb;c") == "a_b_c"
    assert identifier("tsl_x", reserved_prefixes=("tsl_",)) == "tsl_x_"
    assert identifier("TSL_X", reserved_prefixes=("tsl_",)) == "TSL_X_"
    assert identifier("Node", "dot") == "Node_"
    assert len(identifier("y" * 10_000)) <= 49
    for s in ["λ", "\ud800", "a\u202eb", "x\x00"]:
        out = identifier(s)
        assert out.isascii() and out.isidentifier()


def test_shown_is_one_safe_printable_line():
    from tessel.ir.names import comment, shown

    assert shown("B") == "B" and shown("i.outer") == "i.outer" and shown('say "hi"') == 'say "hi"'
    assert shown("a\nb") == "a\\nb" and shown("a\rb\tc") == "a\\rb\\tc"
    assert shown("B\\") == "B\\x5c" and shown("B\\  ") == "B\\x5c  " and shown("a\\b") == "a\\b"
    assert shown("??/") == "?\\x3f/" and shown("*/") == "*\\x2f"
    assert shown("\ud800") == "\\ud800" and shown("a\u202eb") == "a\\u202eb"
    assert shown("λ") == "λ" and comment("λ") == "\\u03bb"
    cut = shown("z" * 1000)
    assert len(cut) == 200 and cut.endswith("...")
    for s in ["a\\\n", "??" * 50, "*/*/", "\\" * 9, "x\ud800" * 300, "\x00\x7f\x85\u2029"]:
        once = shown(s)
        assert shown(once) == once and once.isprintable() and not once.rstrip(" ").endswith("\\")
        assert "??" not in once and "*/" not in once
        assert comment(s).isascii()


def test_markup_escapers():
    from tessel.ir.names import dot_string, html_text

    assert html_text("<a href='x'>&\x01") == "&lt;a href=&#39;x&#39;&gt;&amp;\\x01"
    assert dot_string('a"b\\') == '"a\\"b\\\\x5c"'
    assert dot_string(["one", "two\nlines"]) == '"one\\ntwo\\\\nlines"'


# ---- the property: any names at all ---------------------------------------------------------
_SPECIAL = list("\n\r\t\\\"'*/?#<>&;{}()\x00\x0b\x0c\x7f\x85\u2028\u2029\u202e\ufeff")
_CHARS = st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from(_SPECIAL))
_WORDS = ["linux", "unix", "M_PI", "HUGE_VAL", "INT32_MAX", "main", "NAN", "errno", "signbit", "int",
          "for", "return", "None", "lambda", "np", "float32", "_Buf", "tsl_nt", "omp_get_num_threads",
          "__builtins__", "A", "B", "i", "i.outer", "k", "n", "", " ", "0", "9lives"]
# payloads that would create the marker if a name ever became code; {m} is the marker's path
_PAYLOADS = [
    'X\n__attribute__((constructor)) static void p(void){{extern int system(const char*); system("touch {m}");}}\n//',
    "X */ __attribute__((constructor)) static void p(void){{extern int system(const char*); "
    'system("touch {m}");}} /* ',
    "X\n    __import__('os').system('touch {m}')\n    #",
    "X')\n__import__('os').system('touch {m}')\n#",
    "X\\\n__import__('os').system('touch {m}')",
    "X\r    __import__('os').system('touch {m}')\r    #",
]
_NAME = st.one_of(
    st.text(_CHARS, max_size=12),
    st.sampled_from(_WORDS),
    st.sampled_from(range(len(_PAYLOADS))),  # an index: made a payload in the test, with the marker
    st.builds(lambda c, n: c * n, st.text(_CHARS, min_size=1, max_size=3), st.integers(300, 3000)),
    st.builds(lambda a, b: a + b, st.sampled_from(_WORDS), st.text(_CHARS, max_size=4)),
)
# path-safety of build(name=) is covered in tests/runtime/test_hardening_*: on the c target the
# kernel name (which also names the cache's files) is drawn from names that are valid file names
_C_KERNEL = st.one_of(st.sampled_from([w for w in _WORDS if w.strip() and "." not in w]),
                      st.text("abcXYZ019_-+= ", min_size=1, max_size=20))


@st.composite
def _programs(draw):
    names = {key: draw(_NAME) for key in ("a", "b", "k", "n", "tag", "kernel")}
    target = draw(st.sampled_from(["python"] * 7 + ["c"]))  # most on the cheap target
    if target == "c":
        names["kernel"] = draw(_C_KERNEL)
    shape = draw(st.sampled_from(["map", "map_split_bound", "reduce", "symbolic"]))
    return target, shape, names


def _hostile_kernel(shape: str, nm: dict):
    n = te.var(nm["n"]) if shape == "symbolic" else 6
    A = te.placeholder((n, 5), name=nm["a"])
    if shape == "reduce":
        k = te.reduce_axis((0, 5), name=nm["k"])
        B = te.compute((n,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name=nm["b"])
    else:
        B = te.compute((n, 5), lambda i, j: A[i, j] * 2.0 + 1.0, name=nm["b"])
    s = te.create_schedule(B.op)
    if shape == "map_split_bound":
        xo, _ = s[B].split(B.op.axis[1], 2)
        s[B].bind(xo, te.thread_axis(nm["tag"]))
    return s, A, B


def _expected(shape: str, a: np.ndarray) -> np.ndarray:
    return (a * 2.0).sum(axis=1) if shape == "reduce" else a * 2.0 + 1.0


def _tree(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "cache" not in p.relative_to(root).parts}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    old = os.environ.get("TESSEL_CACHE_DIR")
    os.environ["TESSEL_CACHE_DIR"] = str(root / "cache")
    yield root
    if old is None:
        os.environ.pop("TESSEL_CACHE_DIR", None)
    else:
        os.environ["TESSEL_CACHE_DIR"] = old


@settings(max_examples=int(os.environ.get("TESSEL_NAME_EXAMPLES", "300")), derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_programs())
def test_any_names_build_and_compute_or_fail_with_a_reason(sandbox, program):
    target, shape, names = program
    marker = sandbox / "pwned"
    marker.unlink(missing_ok=True)  # each example on its own (hypothesis replays failing ones)
    names = {k: _PAYLOADS[v].format(m=marker) if isinstance(v, int) else v for k, v in names.items()}
    before, cwd_before = _tree(sandbox), set(os.listdir("."))
    try:
        s, A, B = _hostile_kernel(shape, names)
        f = tessel.build(s, [A, B], target=target, name=names["kernel"])
    except (DefinitionError, BuildError) as err:
        assert str(err).strip()  # it says why
        note(f"refused: {type(err).__name__}: {err!r}"[:500])
    else:
        rows = 7 if shape == "symbolic" else 6
        a = np.random.default_rng(rows).uniform(-2, 2, (rows, 5)).astype("float32")
        b = np.full(_expected(shape, a).shape, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, _expected(shape, a), rtol=1e-5, atol=1e-5)
    assert not marker.exists(), f"a name ran code: {names!r}"
    assert _tree(sandbox) == before and set(os.listdir(".")) == cwd_before


class _SelfQuoting(str):
    """A name whose ``repr`` is code: a generator that writes ``repr(name)`` would run it."""

    marker = ""

    def __repr__(self) -> str:
        return f"__import__('os').system('touch {self.marker}')"


def _self_quoting(text: str, marker) -> str:
    name = _SelfQuoting(text)
    name.marker = str(marker)
    return name


@pytest.mark.parametrize("target", ["python", "cuda-sim"])
def test_a_names_own_repr_never_becomes_generated_python(tmp_path, target):
    marker = tmp_path / "pwned"
    A = te.placeholder((8,), name=_self_quoting("A", marker))
    M = te.compute((8,), lambda i: A[i] * 2.0, name=_self_quoting("M", marker))  # a temporary: named in
    B = te.compute((8,), lambda i: M[i] + 1.0, name=_self_quoting("B", marker))  # the code as a literal
    s = te.create_schedule(B.op)
    if target == "cuda-sim":  # M in a kernel of its own: a global temporary the host allocates
        for T in (M, B):
            bx, tx = s[T].split(T.op.axis[0], 4)
            s[T].bind(bx, te.thread_axis("blockIdx.x"))
            s[T].bind(tx, te.thread_axis("threadIdx.x"))
    f = tessel.build(s, [A, B], target=target, name=_self_quoting("k", marker))
    _check(f, 8)
    assert not marker.exists(), f"a name's repr ran as code on the {target} target"


_EVIL_PY = '"); __import__("os").system("touch {m}")#\n*/ \u00e9\u202e'


@pytest.mark.filterwarnings("ignore::tessel.errors.TesselWarning")  # an unused pragma key is kept, said once
def test_printed_schedule_keeps_function_stage_and_pragma_names_data(tmp_path):
    """s.python(func) is code a user runs: the function's name, the stages' names and the
    strings a step took (a pragma key) are identifiers or literals of their characters."""
    marker = tmp_path / "pwned"
    evil = _EVIL_PY.format(m=marker)
    A = te.placeholder((8, 8), name="A" + evil)
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B" + evil)
    s = te.create_schedule(B.op)
    xo, _ = s[B].split(B.op.axis[1], factor=4)
    s[B].pragma(xo, "key" + evil, 1)
    func = 'f"""\n__import__("os").system("touch ' + str(marker) + '")\n"""'
    text = s.python(func)
    ns: dict = {}
    exec(compile(text, "<s.python()>", "exec"), ns)
    assert not marker.exists(), "a name in s.python() ran as code when the text was executed"
    [made] = [v for k, v in ns.items() if callable(v) and k.startswith("f")]
    again = made(B)
    assert not marker.exists(), "a name in s.python() ran as code when the function was called"
    assert [(st.primitive, st.args) for st in again.history[1:]] == [(st.primitive, st.args) for st in s.history[1:]]
    assert [a.pragma_keys for a in again[B].iter_var_attrs.values() if a.pragmas] == [("key" + evil,)]
