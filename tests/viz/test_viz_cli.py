"""`tessel explain` and `tessel show`, end to end on the example scripts, and their failures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from viz_util import EXAMPLES, ROOT, page_data, parse_dot

from tessel.cli import main


def _run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tessel", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_explain_example5_as_a_command(tmp_path):
    out = tmp_path / "report.html"
    r = _run("explain", str(EXAMPLES / "seed001_example5.py"), "-o", str(out), "--engine", "python")
    assert r.returncode == 0, r.stderr
    assert f"tessel: wrote {out} (1 schedule(s), 4 step(s))" in r.stderr
    assert "produce B.local" in r.stdout  # the script's own output is left alone
    steps = page_data(out.read_text())["schedules"][0]["steps"]
    assert [st["state"] for st in steps] == ["ok", "ok", "illegal", "ok"]


def test_show_writes_each_view(tmp_path, capsys):
    script = str(EXAMPLES / "seed001_rfactor.py")
    assert main(["show", script, "--view", "dataflow", "-o", str(tmp_path / "d.dot")]) == 0
    d = parse_dot((tmp_path / "d.dot").read_text())
    assert d.has_edge("tensor:B.rf", "stage:B")
    assert main(["show", script, "--view", "itervar", "--stage", "B.rf", "-o", str(tmp_path / "i.dot")]) == 0
    assert set(parse_dot((tmp_path / "i.dot").read_text()).clusters) == {"B.rf"}
    assert main(["show", script, "-o", str(tmp_path / "t.svg"), "--engine", "python"]) == 0
    assert (tmp_path / "t.svg").read_text().startswith("<svg")
    err = capsys.readouterr().err
    assert "wrote" in err and "tree view of schedule of B" in err


def test_show_to_stdout_keeps_the_scripts_prints_apart(tmp_path):
    r = _run("show", str(EXAMPLES / "seed001_split_reorder.py"), "--view", "tree", "--engine", "python")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("<svg") and r.stdout.rstrip().endswith("</svg>")
    assert "produce C" in r.stderr


def test_script_that_fails(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("from tessel import te\n\nA = te.placeholder((4,), name='A')\nraise RuntimeError('boom')\n")
    r = _run("explain", str(script), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 1
    assert "tessel: error: broken.py failed:" in r.stderr
    assert f'File "{script}", line 4, in <module>' in r.stderr
    assert "RuntimeError: boom" in r.stderr
    assert "runpy" not in r.stderr and "cli.py" not in r.stderr  # only the script's frames
    assert not (tmp_path / "r.html").exists()


def test_illegal_script_still_gets_its_report(tmp_path, capsys):
    """Example 5 without step 3: lowering raises; the report is written anyway, exit code 1."""
    text = (EXAMPLES / "seed001_example5.py").read_text()
    head, _, _ = text.partition("# step 3")
    script = tmp_path / "example5_illegal.py"
    script.write_text(head + "print(tessel.lower(s, [A, C], simple_mode=True))\n")
    out = tmp_path / "r.html"
    assert main(["explain", str(script), "-o", str(out), "--engine", "python"]) == 1
    err = capsys.readouterr().err
    assert "example5_illegal.py failed" in err and "ScheduleError" in err
    assert f"{out} was written anyway" in err
    steps = page_data(out.read_text())["schedules"][0]["steps"]
    assert steps[-1]["transition"] == "made illegal"


def test_script_without_schedule_and_missing_script(tmp_path, capsys):
    script = tmp_path / "nothing.py"
    script.write_text("x = 1\n")
    assert main(["show", str(script), "-o", str(tmp_path / "x.svg")]) == 1
    assert "nothing.py built no schedule" in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists()
    assert main(["explain", str(tmp_path / "missing.py")]) == 1
    assert "no such script" in capsys.readouterr().err


def test_bad_options(tmp_path, capsys):
    script = str(EXAMPLES / "seed001_split_reorder.py")
    assert main(["show", script, "--view", "itervar", "--stage", "nope", "-o", str(tmp_path / "x.svg")]) == 1
    assert "no stage named 'nope'" in capsys.readouterr().err
    assert main(["show", script, "--stage", "C", "-o", str(tmp_path / "x.svg")]) == 1
    assert "--stage applies to --view itervar only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["show", script, "--view", "pictures"])
    assert info.value.code == 2


def test_script_arguments_and_default_output(tmp_path, capsys):
    script = tmp_path / "args.py"
    script.write_text(
        "import sys\nfrom tessel import te\n"
        "n = int(sys.argv[1])\nA = te.placeholder((n,), name='A')\n"
        "B = te.compute((n,), lambda i: A[i] * 2, name='B')\ns = te.create_schedule(B.op)\n"
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["explain", str(script), "--engine", "python", "--", "12"]) == 0
    finally:
        os.chdir(cwd)
    data = page_data((tmp_path / "args.html").read_text())
    assert "B: float32[12]" in data["schedules"][0]["steps"][0]["ir"]["lowered"]


@pytest.mark.skipif(shutil.which("tessel") is None, reason="the console script is not installed")
def test_console_script(tmp_path):
    out = tmp_path / "t.dot"
    r = subprocess.run(["tessel", "show", str(EXAMPLES / "seed001_example5.py"), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert parse_dot(out.read_text()).children("loop:C:ci") == ["stage:B", "stage:B.local", "loop:C:cj"]
