"""The README's first command runs ``python -m tessel.demo``: every kernel in it, the
auto-scheduled one included, must build and match NumPy (here on the python target, at the
demo's small sizes, so the test stays quick)."""

from __future__ import annotations

from tessel import demo


def test_demo_kernels_all_match_numpy(capsys):
    assert demo.main(["--target", "python", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.count("check against NumPy: OK") == len(demo.KERNELS) == 4
    assert "MISMATCH" not in out
    assert "def schedule(C):" in out and "s.cache_write(C, 'local')" in out  # the auto schedule, as Python
