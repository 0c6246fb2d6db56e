"""A TVM name tessel does not offer says so, and what to use; never Python's "did you mean"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tessel
import tessel.tvm as tvm
from tessel.errors import NotOfferedError, NotOfferedModuleError, TesselError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("owner, name, advice", [
    (tvm, "relay", "te.compute"),
    (tvm, "auto_scheduler", "schedule by hand"),
    (tvm, "rocm", "tvm.cuda(0)"),
    (tvm.tir, "Schedule", "te.create_schedule"),
    (tvm.te, "no_such_thing", "dir() of a module"),
    (tvm.nd, "from_dlpack", "tvm.nd arrays"),
    (tvm.runtime, "profiling", "tvm.runtime.load_module"),
    (tvm.contrib, "graph_executor", "te.compute"),
    (tvm.te, "register_func", "tvm.register_func"),  # a name tessel has, asked for in the wrong module
])
def test_a_missing_name_says_tessel_does_not_offer_it(owner, name, advice):
    with pytest.raises(NotOfferedError) as info:
        getattr(owner, name)
    text = str(info.value)
    assert text.startswith("tessel does not offer tvm.") and f".{name}" in text and advice in text
    assert isinstance(info.value, AttributeError) and isinstance(info.value, TesselError)
    assert not hasattr(owner, name) and getattr(owner, name, 42) == 42


@pytest.mark.parametrize("statement, qualname", [
    ("from tessel.tvm import relay", "tvm.relay"),
    ("import tessel.tvm.topi.x86", "tvm.topi.x86"),
    ("from tessel.tvm.contrib import graph_executor", "tvm.contrib.graph_executor"),
])
def test_importing_a_missing_module_says_so(statement, qualname):
    with pytest.raises(NotOfferedModuleError, match=f"tessel does not offer {qualname}"):
        exec(statement, {})
    try:
        exec(statement, {})
    except ImportError:  # code that tries an optional import still catches it
        pass


def test_no_did_you_mean_from_tessels_own_names():
    """The complaint that started this: `import tessel as tvm; tvm.nd` suggested `isnan`."""
    res = subprocess.run([sys.executable, "-c", "import tessel as tvm\ntvm.nd.array"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    last = res.stderr.strip().splitlines()[-1]
    assert "Did you mean" not in res.stderr and "isnan" not in res.stderr
    assert last.startswith("tessel.errors.NotOfferedError") and "import tessel.tvm as tvm" in last
    assert "tessel tvm SCRIPT.py" in last


def test_tessels_own_misspellings_keep_pythons_suggestion():
    with pytest.raises(AttributeError) as info:
        tessel.lowr  # noqa: B018
    assert not isinstance(info.value, NotOfferedError) and info.value.name == "lowr"


def test_offered_names_resolve():
    assert tvm.tir.exp is tessel.te.exp and tvm.te.thread_axis is tessel.te.thread_axis
    assert tvm.contrib.tedd.viz_schedule_tree and tvm.contrib.utils.tempdir
    assert tvm.TVMError is tvm.error.TVMError


def test_tvm_shaped_objects_refuse_missing_attributes_the_same_way():
    A = tvm.te.placeholder((3,), name="A")
    B = tvm.te.compute((3,), lambda i: A[i] + 1, name="B")
    s = tvm.te.create_schedule(B.op)
    objects = {"tvm.runtime.Module": tvm.build(s, [A, B], "llvm"), "tvm.IRModule": tvm.lower(s, [A, B]),
               "tvm.nd.NDArray": tvm.nd.array([1.0]), "tvm.target.Target": tvm.target.Target("llvm")}
    for qual, obj in objects.items():
        with pytest.raises(NotOfferedError, match=f"tessel does not offer {qual}.no_such"):
            obj.no_such  # noqa: B018
        assert not hasattr(obj, "_private")
    # save is offered (an object file with the calling contract: test_tvm_export.py)
