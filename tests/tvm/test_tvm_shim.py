"""`tessel tvm SCRIPT.py` runs a TVM script unchanged, `import tvm` meaning tessel for that run only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import tessel
import tessel.tvm
from tessel import cli
from tessel.tvm._driver import without_produce_marks
from tessel.tvm.shim import tvm_imports

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tvm
    import tvm.testing
    from tvm import te
    from tvm.contrib import tedd
    n = int(sys.argv[1])
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * float(sys.argv[2]), name="B")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], "llvm")
    a = tvm.nd.array(np.arange(n, dtype="float32"), tvm.cpu(0))
    b = tvm.nd.array(np.zeros(n, dtype="float32"), tvm.cpu(0))
    f(a, b)
    tvm.testing.assert_allclose(b.numpy(), np.arange(n) * float(sys.argv[2]))
    np.save(sys.argv[3], b.numpy())
    print("tvm is", tvm.__name__, "te is", te.__name__)
""")


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def test_the_command_runs_a_script_unchanged_with_its_arguments(tmp_path):
    script = tmp_path / "scale.py"
    script.write_text(SCRIPT)
    out = tmp_path / "b.npy"
    res = subprocess.run([sys.executable, "-m", "tessel", "tvm", str(script), "7", "2.5", str(out)],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "tvm is tessel.tvm te is tessel.tvm.te" in res.stdout
    np.testing.assert_array_equal(np.load(out), np.arange(7, dtype="float32") * 2.5)


def test_a_failing_script_fails_the_command(tmp_path, capsys):
    script = tmp_path / "bad.py"
    script.write_text("import tvm\ntvm.relay.build(None)\n")
    assert cli.main(["tvm", str(script)]) == 1
    err = capsys.readouterr().err
    assert "bad.py failed" in err and "tessel does not offer tvm.relay" in err


def test_plain_import_tvm_is_untouched_elsewhere(tmp_path):
    """Importing tessel (and tessel.tvm) installs nothing that answers `import tvm`: a process
    finds a real TVM install if there is one, and otherwise none."""
    probe = ("import tessel, tessel.tvm\n"
             "try:\n    import tvm\nexcept ModuleNotFoundError as e:\n    print('no tvm:', e.name)\n"
             "else:\n    print('tvm at', getattr(tvm, '__file__', None))\n")
    res = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    line = res.stdout.strip()
    assert line == "no tvm: tvm" or (line.startswith("tvm at") and "tessel" not in line)


def test_the_alias_is_removed_after_the_run():
    before = list(sys.meta_path)
    with tvm_imports():
        import tvm
        import tvm.contrib.tedd
        from tvm import te

        assert tvm is tessel.tvm and te is tessel.tvm.te
        assert sys.modules["tvm.contrib.tedd"] is tessel.tvm.contrib.tedd  # one module under both names
    assert sys.meta_path == before
    assert not [k for k in sys.modules if k == "tvm" or k.startswith("tvm.")]


def test_earlier_tvm_modules_are_put_back():
    fake = type(sys)("tvm")
    sys.modules["tvm"] = fake
    try:
        with tvm_imports():
            import tvm

            assert tvm is tessel.tvm
        assert sys.modules["tvm"] is fake
    finally:
        del sys.modules["tvm"]


SEED_STYLE = textwrap.dedent("""
    M, N = 13, 7
    A = tvm.placeholder((M, N), name='A')
    B = tvm.compute((M, N), lambda bi, bj: A[bi, bj] + 1, name='B')
    k = tvm.reduce_axis((0, N), name='k')
    C = tvm.compute((M,), lambda ci: tvm.sum(B[ci, k] * 3, axis=k), name='C')
    s = tvm.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    print(tvm.lower(s, [A, C], simple_mode=True))
""")


def test_the_seeds_tvm_0_6_names_work_through_the_alias(capsys):
    """`import tvm` under the alias accepts what `import tessel as tvm` accepts, with the same IR
    but for tessel's `produce X` marks, which TVM's IR (since 0.7) does not have: TVM code walks
    `func.body.body` and finds the loops there."""
    ns: dict = {}
    exec("import tessel as tvm\n" + SEED_STYLE, ns)
    direct = capsys.readouterr().out
    with tvm_imports():
        exec("import tvm\n" + SEED_STYLE, {})
    unmarked = without_produce_marks(tessel.lower(ns["s"], [ns["A"], ns["C"]], simple_mode=True))
    assert "produce B" in direct and "produce" not in str(unmarked)
    assert capsys.readouterr().out == str(unmarked) + "\n"


def test_a_tvm_test_file_runs_its_tests(tmp_path):
    """TVM's test files end in tvm.testing.main(): under `tessel tvm` that runs them with pytest."""
    (tmp_path / "test_scale.py").write_text(textwrap.dedent("""
        import numpy as np
        import tvm
        import tvm.testing
        from tvm import te

        def test_scale():
            A = te.placeholder((5,), name="A")
            B = te.compute((5,), lambda i: A[i] * 3, name="B")
            f = tvm.build(te.create_schedule(B.op), [A, B], "llvm")
            a, b = tvm.nd.array(np.arange(5, dtype="float32")), tvm.nd.array(np.zeros(5, "float32"))
            f(a, b)
            tvm.testing.assert_allclose(b.numpy(), np.arange(5) * 3)

        def test_fails_on_purpose():
            tvm.testing.assert_allclose(np.ones(2), np.zeros(2))

        if __name__ == "__main__":
            tvm.testing.main()
    """))
    res = subprocess.run([sys.executable, "-m", "tessel", "tvm", "test_scale.py", "-q"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr  # one test fails, so the file fails
    assert "1 failed, 1 passed" in res.stdout and "exited with status 1" in res.stderr
