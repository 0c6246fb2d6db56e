"""Misusing tessel.tune is a TuneError that says what to pass, raised before anything is
measured: a template that is not one, arguments that do not fit it, a log that cannot be
written. A template's name reaches the progress line only escaped."""

from __future__ import annotations

import functools
import io

import pytest
from kernels import matmul

from tessel.errors import TuneError
from tessel.tune import Task, tune


@pytest.mark.parametrize("template", [42, None, 3.5, ["tests/troublesome"]])
def test_a_template_that_is_no_function_says_what_a_template_is(template):
    with pytest.raises(TuneError, match="a template is a function f\\(cfg, \\*args\\)"):
        tune(template, (8,), trials=1, progress=False)


@pytest.mark.parametrize("args", [(), (8, 8), (8, 8, 8, 8)])
def test_arguments_that_do_not_fit_the_template_name_it_and_its_parameters(args):
    with pytest.raises(TuneError, match=r"template .*matmul cannot take the arguments .* pass args= with one value "
                                        r"per parameter of matmul\(cfg, n"):
        Task(matmul, args)


def test_a_template_without_a_qualified_name_still_makes_a_task():
    task = Task(functools.partial(matmul), (4, 4, 4))
    assert "partial" in task.name and len(task.config_space) > 1


@pytest.mark.parametrize("where", ["directory", "missing parent"])
def test_a_log_that_cannot_be_written_is_refused_before_measuring(tmp_path, where):
    log = tmp_path if where == "directory" else tmp_path / "no" / "such" / "t.log"
    out = io.StringIO()
    with pytest.raises(TuneError, match="is a directory; give a file" if where == "directory"
                       else "does not exist; create it first"):
        tune(matmul, (4, 4, 4), trials=2, tuner="grid", target="python", log=log, progress=out)
    assert out.getvalue() == ""  # nothing was measured


def test_a_log_that_is_not_a_path_is_a_tune_error():
    with pytest.raises(TuneError, match="give a file path"):
        tune(matmul, (4, 4, 4), trials=1, target="python", log=42, progress=False)


def test_a_template_name_reaches_the_progress_line_escaped():
    from tessel.tune.progress import Progress

    out = io.StringIO()
    bar = Progress("tune x\x1b[2J\r\nfake: done", 4, stream=out)
    bar.update(1, 1e-3, 0)
    bar.close()
    text = out.getvalue()
    assert "\x1b[2J" not in text and "\\x1b[2J" in text
    assert "[2J\\r\\nfake: done" in text and len(text.splitlines()) == 2  # one update, one close


@pytest.mark.parametrize("target", ["cuda", "cuda-sim"])
def test_a_target_the_measurer_cannot_run_is_refused_before_measuring(target):
    out = io.StringIO()
    with pytest.raises(TuneError, match=f"target must be one of c, python, not {target}"):
        tune(matmul, (4, 4, 4), trials=2, target=target, progress=out)
    assert out.getvalue() == ""
