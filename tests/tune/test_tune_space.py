"""Config spaces: the choices each knob offers, indices, JSON, and templates built from a config."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import TARGETS, check, rand
from kernels import matmul

import tessel
from tessel.errors import TuneError
from tessel.tune import ConfigEntity, ConfigSpace, FallbackConfigEntity, Task


def test_split_factors_cover_every_exact_split():
    cfg = ConfigSpace()
    cfg.define_split("t", 12, num_outputs=3)
    sizes = [e.size for e in cfg.space_map["t"].entities]
    assert all(s[0] == -1 and 12 % math.prod(s[1:]) == 0 for s in sizes)
    # ordered pairs (a, b) with a*b dividing 12: 18 of them
    assert len(sizes) == sum(1 for a in range(1, 13) for b in range(1, 13) if 12 % (a * b) == 0)


def test_split_policies_and_filters():
    cfg = ConfigSpace()
    cfg.define_split("p", 20, policy="power2", num_outputs=2)
    cfg.define_split("f", 20, num_outputs=2, filter=lambda e: e.size[-1] >= 4)
    cfg.define_split("c", 20, policy="candidate", candidate=[[-1, 5], [-1, 3]])
    assert [e.size[1] for e in cfg.space_map["p"].entities] == [1, 2, 4, 8, 16]
    assert [e.size[1] for e in cfg.space_map["f"].entities] == [4, 5, 10, 20]
    assert [e.size for e in cfg.space_map["c"].entities] == [[-1, 5], [-1, 3]]
    with pytest.raises(TuneError, match="no split"):
        cfg.define_split("none", 7, filter=lambda e: False)


def test_index_knobs_and_json_round_trip():
    cfg = ConfigSpace()
    cfg.define_split("a", 8)
    cfg.define_knob("b", [1, 2, 3])
    cfg.define_reorder("c", [cfg.axis(2), cfg.axis(3), cfg.axis(4)], policy="all")
    cfg.define_annotate("d", [cfg.axis(2), cfg.axis(3)], policy="try_unroll")
    assert cfg.dims == [4, 3, 6, 4] and len(cfg) == 4 * 3 * 6 * 4
    for i in (0, 1, 37, len(cfg) - 1):
        assert cfg.knob2point(cfg.point2knob(i)) == i
        one = cfg.get(i)
        back = ConfigEntity.from_json_dict(one.to_json_dict())
        assert back == one and back.index == i
    assert sorted(cfg.get(95)["c"].perm) == [0, 1, 2]
    with pytest.raises(TuneError, match="outside the space"):
        cfg.get(len(cfg))


def test_a_config_reads_only_the_knobs_it_has():
    cfg = ConfigSpace()
    cfg.define_knob("x", [4, 5])
    with pytest.raises(TuneError, match="no knob 'y'"):
        cfg["y"]
    with pytest.raises(TuneError, match="malformed"):
        ConfigEntity.from_json_dict({"index": 0, "entity": [["x", "zz", 1]]})


@pytest.mark.parametrize("index", [0, 5, 19, 38])
def test_every_config_of_a_template_computes_the_product(index):
    task = Task(matmul, (9, 7, 12))
    s, args = task.instantiate(task.config(index % len(task.config_space)))
    a, b = rand(9, 7), rand(7, 12, seed=1)
    check(s, args, [a, b], [a @ b], targets=TARGETS, rtol=1e-4)


def test_fallback_config_builds_and_fallback_split_respects_bounds():
    cfg = FallbackConfigEntity()
    s, args = matmul(cfg, 16, 8, 24)
    assert cfg.is_fallback and cfg["tile_y"].size == [-1, 1]
    cfg.fallback_split("tile_x", [-1, 6])
    assert cfg["tile_x"].size == [-1, 6]
    a, b = rand(16, 8), rand(8, 24, seed=2)
    out = np.zeros((16, 24), "float32")
    tessel.build(s, args, target="c")(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4)


def test_workload_key_names_the_computation_and_args():
    one, same, other = Task(matmul, (4, 4, 8)), Task(matmul, (4, 4, 8)), Task(matmul, (4, 4, 16))
    assert one.workload == same.workload and one.workload != other.workload
    assert one.flop == 2 * 4 * 4 * 8


def _mostly_filtered(cfg):
    """1000 configs of which a filter keeps three: (0, 0, 0), (4, 2, 7) and (9, 9, 9)."""
    from tessel import te

    for name in "abc":
        cfg.define_knob(name, list(range(10)))
    cfg.multi_filter(lambda c: (c["a"].val, c["b"].val, c["c"].val) in {(0, 0, 0), (4, 2, 7), (9, 9, 9)})
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    return te.create_schedule(B.op), [A, B]


def test_random_configs_from_a_space_its_filter_mostly_excludes_are_found_not_drawn_for_ever():
    """More than 4 x n configs unvisited but fewer than n valid ones: the random draws used to
    loop for ever; they are bounded, then what is left is enumerated."""
    from tessel.tune import RandomTuner

    tuner = RandomTuner(Task(_mostly_filtered))
    first = tuner.next_batch(8)
    assert sorted(first) == sorted(i for i in range(1000) if tuner.space.is_index_valid(i)) and len(first) == 3
    tuner.visited.update(first)
    assert tuner.next_batch(8) == []  # nothing valid is left: the tuning loop ends


@pytest.mark.parametrize("size", [1, 2, 3, 12, 97, 1000])
def test_the_walk_through_a_space_visits_every_config_once(size):
    from tessel.tune import RandomTuner

    tuner = RandomTuner(Task(_mostly_filtered))
    for _ in range(5):
        start, step = int(tuner.rng.integers(size)), tuner._step_prime_to(size)
        assert sorted((start + k * step) % size for k in range(size)) == list(range(size))
