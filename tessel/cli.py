"""The ``tessel`` command: run a user's script and show the schedules it builds; manage the cache.

``tessel explain SCRIPT.py -o report.html`` writes the step explorer of every schedule the
script creates; ``tessel show SCRIPT.py --view tree -o tree.svg`` draws one view of the last
one. The script runs unmodified (as ``python SCRIPT.py`` would run it): schedules are found
through the history hook every schedule calls when it is created, and the tensors the script
passes to ``tessel.lower``/``tessel.build`` are noted so the report lowers with the same ones.
``tessel cache info`` and ``tessel cache clear`` show and empty the cache of compiled kernels.
``tessel tvm SCRIPT.py [ARGS]`` runs a TVM tensor-expression script unchanged, its ``import tvm``
meaning tessel's TVM spellings (:mod:`tessel.tvm`) in that process only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import TesselError, ViewError
from .ir.names import shown
from .schedule import history
from .schedule.schedule import Schedule
from .viz.svg import ENGINES

VIEW_NAMES = ("tree", "dataflow", "itervar")


@dataclass
class ScriptRun:
    """What running a script left behind: its schedules, their lower() arguments, its failure."""

    path: Path
    schedules: list[Schedule] = field(default_factory=list)
    args: dict[Schedule, list] = field(default_factory=dict)
    failure: str | None = None


def run_script(path: str | Path, argv: list[str] | None = None, stdout_to_stderr: bool = False) -> ScriptRun:
    """Run ``path`` as ``__main__`` and collect every schedule it creates, even if it fails."""
    path = Path(path)
    if not path.is_file():
        raise ViewError(f"no such script: {path}")
    run = ScriptRun(path)
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *(argv or [])]
    sys.path.insert(0, str(path.resolve().parent))
    redirect = contextlib.redirect_stdout(sys.stderr) if stdout_to_stderr else contextlib.nullcontext()
    try:
        with history.capture() as found, _note_lower_args(run.args), redirect:
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as err:
                if err.code not in (None, 0):
                    run.failure = f"{path.name} exited with status {err.code}"
            except Exception as err:
                run.failure = _traceback_tail(err, path)
        run.schedules = list(found)
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    return run


@contextlib.contextmanager
def _note_lower_args(seen: dict) -> Iterator[None]:
    """While the script runs, remember the tensors it lowers or builds each schedule with."""
    from . import driver

    original = driver.lower_steps

    def noting(sch, args, *rest, **kw):
        if isinstance(sch, Schedule):
            seen[sch] = list(args)
        return original(sch, args, *rest, **kw)

    driver.lower_steps = noting
    try:
        yield
    finally:
        driver.lower_steps = original


def _traceback_tail(err: BaseException, script: Path, lines: int = 25) -> str:
    """The traceback from the script's own frames on (not runpy's or ours), last lines only."""
    tb = err.__traceback__
    target = str(script.resolve())
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(err), err, tb or err.__traceback__))
    tail = text.rstrip("\n").splitlines()[-lines:]
    return "\n".join(tail)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tessel", description="Show what tessel schedules do.",
                                epilog="Arguments after -- are passed on to the script.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ex = sub.add_parser("explain", help="run a script; write a step-by-step HTML explorer of its schedules")
    ex.add_argument("script", help="a Python script that builds schedules")
    ex.add_argument("-o", "--output", help="HTML file to write (default: SCRIPT's name with .html, here)")
    ex.add_argument("--engine", choices=ENGINES, default="auto",
                    help="draw with Graphviz's dot when present (auto), always (dot) or never (python)")
    sh = sub.add_parser("show", help="run a script; draw one view of the last schedule it builds")
    sh.add_argument("script", help="a Python script that builds schedules")
    sh.add_argument("--view", choices=VIEW_NAMES, default="tree", help="which picture (default: tree)")
    sh.add_argument("--stage", help="for --view itervar: only this stage")
    sh.add_argument("-o", "--output", help="file to write: .svg, or .dot/.gv for DOT text (default: SVG to stdout)")
    sh.add_argument("--engine", choices=ENGINES, default="auto", help="as for explain")
    tv = sub.add_parser("tvm", help="run a TVM TE script unchanged, with `import tvm` meaning tessel (this run only)")
    tv.add_argument("script", help="a Python script written for TVM's tensor expressions")
    tv.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed on to the script")
    ca = sub.add_parser("cache", help="show (info) or empty (clear) the cache of compiled kernels")
    ca.add_argument("action", choices=("info", "clear"),
                    help="info: location, entries, size and limit; clear: remove every entry")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:  # split by hand: argparse's own "--" handling fails under subcommands
        k = argv.index("--")
        argv, script_args = argv[:k], argv[k + 1:]
    args = _parser().parse_args(argv)
    args.script_args = [*getattr(args, "script_args", []), *script_args]
    try:
        if args.command == "cache":
            return _cache(args.action)
        if args.command == "tvm":
            return _tvm(args)
        return _explain(args) if args.command == "explain" else _show(args)
    except TesselError as err:
        print(f"tessel: error: {_terminal(str(err))}", file=sys.stderr)
        return 1


def _terminal(text: str) -> str:
    """Text for the terminal: its lines kept, every other control character (an ANSI escape, a
    carriage return a name carried in) escaped, so no name can rewrite what is shown."""
    return "\n".join(shown(line, None) for line in text.split("\n"))


def _output(path: str | os.PathLike, script: str) -> Path:
    """Where a report goes, checked before the script runs (a long script that ran only to fail
    at the end would be lost): its folder must exist, and it must not be the script itself."""
    out = Path(path)
    if not out.parent.is_dir():
        raise ViewError(f"cannot write {shown(str(out))}: its folder {shown(str(out.parent))} does not exist; "
                        "create it first or give -o another path")
    with contextlib.suppress(OSError):
        if out.exists() and os.path.samefile(out, script):
            raise ViewError(f"-o {shown(str(out))} is the script itself, which would be overwritten; give the "
                            "report another name (e.g. the script's name with .html)")
    if out.exists() and not out.is_file():
        raise ViewError(f"cannot write {shown(str(out))}: it is not a file")
    return out


def _explain(args) -> int:
    from .viz import explorer

    out = _output(args.output or Path(args.script).with_suffix(".html").name, args.script)
    run = run_script(args.script, args.script_args)
    if run.schedules:
        explorer(run.schedules, args=run.args, path=out, engine=args.engine,
                 title=f"tessel explain {Path(args.script).name}")
        steps = sum(len(s.history) for s in run.schedules)
        print(f"tessel: wrote {shown(str(out), None)} ({len(run.schedules)} schedule(s), {steps} step(s))",
              file=sys.stderr)
    return _verdict(run, wrote=out if run.schedules else None)


def _show(args) -> int:
    from .viz import dataflow_graph, itervar_graph, schedule_tree

    if args.output:
        _output(args.output, args.script)
    run = run_script(args.script, args.script_args, stdout_to_stderr=args.output is None)
    if run.schedules:
        sch = run.schedules[-1]
        if args.view == "itervar":
            view = itervar_graph(sch, stage=args.stage)
        else:
            if args.stage:
                raise ViewError("--stage applies to --view itervar only")
            view = schedule_tree(sch) if args.view == "tree" else dataflow_graph(sch)
        if args.output:
            view.save(args.output, engine=args.engine)
            print(f"tessel: wrote {shown(args.output, None)} ({args.view} view of {_name(sch)})", file=sys.stderr)
        else:
            sys.stdout.write(view.to_svg(args.engine))
    return _verdict(run, wrote=args.output if run.schedules else None)


def _tvm(args) -> int:
    """Run the script as ``python SCRIPT.py`` would, but with tessel answering ``import tvm``."""
    from .tvm.shim import tvm_imports

    with tvm_imports():
        run = run_script(args.script, args.script_args)
    if run.failure:
        print(_terminal(f"tessel: error: {run.path.name} failed:\n{run.failure}"), file=sys.stderr)
        return 1
    return 0


def _cache(action: str) -> int:
    from .runtime import files

    if action == "clear":
        n = files.clear()
        print(f"tessel: removed {n} entr{'y' if n == 1 else 'ies'} from {files.cache_dir()}")
        return 0
    got = files.info()
    limit = got["limit_bytes"]
    print(f"location: {got['location']}  ($TESSEL_CACHE_DIR)")
    print(f"entries:  {got['kernels']} compiled kernel(s), {got['lowered']} remembered plan(s)")
    print(f"size:     {_mb(got['bytes'])}")
    print(f"limit:    {_mb(limit) if limit else 'none'}  ($TESSEL_CACHE_MAX_MB, default "
          f"{files.DEFAULT_MAX_MB:g}; least recently used entries go first)")
    if got["leftovers"]:
        print(f"in progress or left by killed builds: {got['leftovers']} file(s)")
    return 0


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB ({n} bytes)"


def _verdict(run: ScriptRun, wrote) -> int:
    if run.failure:
        msg = f"tessel: error: {run.path.name} failed:\n{run.failure}"
        if wrote:
            msg += f"\ntessel: {wrote} was written anyway, from the schedule(s) built before the failure"
        print(_terminal(msg), file=sys.stderr)
        return 1
    if not run.schedules:
        print(f"tessel: error: {run.path.name} built no schedule (no te.create_schedule call ran), "
              "so there is nothing to show", file=sys.stderr)
        return 1
    return 0


def _name(sch: Schedule) -> str:
    return "schedule of " + ", ".join(shown(op.name) for op in sch.outputs)


if __name__ == "__main__":
    sys.exit(main())
