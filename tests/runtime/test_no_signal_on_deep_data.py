"""Issue 30, item 2: deep data never ends a process with a signal. The deep-program worker really
has its big stack, its raised recursion limit is its own (another thread's C recursion meets the
ordinary limit, a RecursionError), and a cache file nested 100,000 deep is damage, rebuilt.
Each probe runs in a subprocess: a SIGSEGV would end the test run itself."""

from __future__ import annotations

from faults_util import BUILD_13, probe

DEEP = "'[' * 100_000 + ']' * 100_000"  # as code, for the probes
DEEP_TEXT = "[" * 100_000 + "]" * 100_000


def test_cache_files_nested_100000_deep_are_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    probe(BUILD_13, cache)
    damaged = [cache / "compilers.json", *(cache / "kernels").glob("*.json"), *(cache / "lowered").glob("*.json")]
    assert len(damaged) == 3
    for p in damaged:
        p.write_text(DEEP_TEXT)
    assert probe(BUILD_13, cache).strip() == "ok"
    assert all(p.read_text() != DEEP_TEXT for p in damaged[1:])  # rewritten whole


def test_the_deep_worker_has_its_big_stack(tmp_path):
    out = probe(f"""
        import json
        from tessel.deep import deep_stack
        @deep_stack("probe", lambda: True)
        def walk():
            return len(json.loads({DEEP}))
        print(walk())
    """, tmp_path)
    assert out.strip() == "1"


def test_another_threads_recursion_during_a_deep_build_is_a_recursion_error(tmp_path):
    out = probe(f"""
        import json, threading
        import numpy as np
        import tessel
        from tessel import te
        from tessel.deep import deep_stack
        started, done, seen = threading.Event(), threading.Event(), []
        def other():
            started.wait()
            while not done.is_set():
                try:
                    json.loads({DEEP})
                except RecursionError:
                    seen.append(1)
        t = threading.Thread(target=other)
        t.start()
        @deep_stack("probe", lambda: True)
        def deep_build():
            started.set()
            A = te.placeholder((1200,), name="A")
            e = A[0]
            for k in range(1, 1200):
                e = e + A[k]
            B = te.compute((1,), lambda i: e, name="B")
            f = tessel.build(te.create_schedule(B.op), [A, B], target="python")
            while not seen:
                pass
            return f, A
        f, A = deep_build()
        done.set()
        t.join()
        a = np.random.default_rng(3).uniform(-1, 1, 1200).astype("float32")
        b = np.zeros(1, "float32")
        f(a, b)
        np.testing.assert_allclose(b[0], a.astype("float64").sum(), rtol=1e-4)
        print(len(seen) > 0)
    """, tmp_path)
    assert out.strip() == "True"
