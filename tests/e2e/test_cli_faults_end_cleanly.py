"""Issue 30, items 4 and 7: the command line checks where a report goes before it runs the
script, never overwrites the script, and shows names (in messages and warnings) escaped: a
newline or a terminal escape in a name never reaches the terminal as such. ``tvm.te.hybrid``
is refused as a TVM module tessel does not offer."""

from __future__ import annotations

import warnings

import pytest

import tessel
from tessel import te
from tessel.cli import main
from tessel.errors import NotOfferedModuleError, TesselWarning

_SCRIPT = """
from pathlib import Path
import tessel
from tessel import te
Path({marker!r}).write_text("ran")
A = te.placeholder((13,), name="A")
B = te.compute((13,), lambda i: A[i] + 1.0, name={name!r})
s = te.create_schedule(B.op)
"""


def _script(tmp_path, name: str = "B"):
    marker = tmp_path / "ran.txt"
    script = tmp_path / "k.py"
    script.write_text(_SCRIPT.format(marker=str(marker), name=name))
    return script, marker


def test_explain_into_a_missing_folder_is_refused_before_the_script_runs(tmp_path, capsys):
    script, marker = _script(tmp_path)
    assert main(["explain", str(script), "-o", str(tmp_path / "no" / "such" / "r.html")]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "no/such" in err
    assert not marker.exists()  # the script did not run


@pytest.mark.parametrize("command", [["explain"], ["show", "--view", "tree"]])
def test_a_report_never_overwrites_the_script(tmp_path, capsys, command):
    script, marker = _script(tmp_path)
    text = script.read_text()
    assert main([command[0], str(script), *command[1:], "-o", str(script)]) == 1
    assert "the script itself" in capsys.readouterr().err
    assert script.read_text() == text and not marker.exists()


def test_show_escapes_names_on_the_terminal(tmp_path, capsys):
    script, _ = _script(tmp_path, name="B\x1b[2J\nfake: line\r")
    out = tmp_path / "tree.svg"
    assert main(["show", str(script), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and err.count("\n") == 1
    assert "\\x1b[2J\\nfake: line\\r" in err


def test_warnings_escape_names(tmp_path):
    A = te.placeholder((13,), name="A")
    B = te.compute((13,), lambda i: A[i] + 1.0, name="B\x1b[31m\nfake")
    s = te.create_schedule(B.op)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s[B].pragma(B.op.axis[0], "my_pragma")
    text = [str(w.message) for w in seen if issubclass(w.category, TesselWarning)]
    assert text and all("\x1b" not in t and "\n" not in t for t in text)
    assert "\\x1b[31m\\nfake" in text[0]


def test_tvm_te_hybrid_is_refused_as_not_offered():
    for code in ("import tessel.tvm.te.hybrid", "from tessel.tvm.te import hybrid"):
        with pytest.raises(NotOfferedModuleError, match="tvm.te.hybrid; there is no hybrid script"):
            exec(code, {})
    assert tessel.tvm.te.compute is te.compute  # the module works as before
