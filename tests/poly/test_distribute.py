"""The distributed plan's sets are exact: compared with brute-force enumeration of the reads."""

from __future__ import annotations

import itertools

import pytest

from tessel import DistributionError, te
from tessel import distributed as dist
from tessel.poly.distribute import blocks


@pytest.mark.parametrize("extent,ranks", [(10, 3), (3, 4), (0, 2), (7, 7), (1, 1)])
def test_blocks_cover_once_and_differ_by_at_most_one(extent, ranks):
    bs = blocks(extent, ranks)
    assert [x for lo, hi in bs for x in range(lo, hi)] == list(range(extent))
    sizes = [hi - lo for lo, hi in bs]
    assert max(sizes) - min(sizes) <= 1


def _stencil(n, m, offsets, block=None):
    """B[i, j] = sum of A at the offsets, where all of them are inside (else A[i, j])."""
    A = te.placeholder((n, m), name="A", dtype="float64")
    at = lambda x, d: x if d == 0 else x + d if d > 0 else x - (-d)  # noqa: E731  (prints as i - 1)

    def body(i, j):
        ok = te.all(*[c for di, dj in offsets for c in (at(i, di) >= 0, at(i, di) < n, at(j, dj) >= 0,
                                                         at(j, dj) < m)])
        return te.if_then_else(ok, sum(A[at(i, di), at(j, dj)] for di, dj in offsets), A[i, j])

    B = te.compute((n, m), body, name="B")
    s = te.create_schedule(B.op)
    s[B].distribute(B.op.axis[0], **({"block": block} if block else {}))
    return s, A, B


def _brute(n, m, offsets, ranks, block=None):
    """{(dst, src): elements} by enumerating every read of every part's rows."""
    bs = blocks(n, ranks) if block is None else blocks(n, -(-n // block), block)
    owner = {i: r for r, (lo, hi) in enumerate(bs) for i in range(lo, hi)}
    out: dict[tuple[int, int], set] = {}
    for r, (lo, hi) in enumerate(bs):
        for i, j in itertools.product(range(lo, hi), range(m)):
            inside = all(0 <= i + di < n and 0 <= j + dj < m for di, dj in offsets)
            for di, dj in offsets if inside else [(0, 0)]:
                q = owner[i + di]
                if q != r:
                    out.setdefault((r, q), set()).add((i + di, j + dj))
    return out


def _planned(p):
    out: dict[tuple[int, int], set] = {}
    for msg in p.messages:
        pts = out.setdefault((msg.dst, msg.src), set())
        for b in msg.boxes:
            pts |= set(itertools.product(*[range(a, c) for a, c in zip(b.lo, b.hi)]))
        assert msg.count == sum(b.size for b in msg.boxes)
    return out


@pytest.mark.parametrize("n,m,ranks,offsets", [
    (10, 6, 3, [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)]),
    (9, 5, 2, [(-2, 1), (1, -1), (0, 0)]),
    (11, 4, 4, [(-1, -1), (1, 1), (2, 0)]),
    (3, 5, 4, [(-1, 0), (1, 0)]),
])
def test_messages_equal_brute_force_enumeration(n, m, ranks, offsets):
    s, A, B = _stencil(n, m, offsets)
    p = dist.plan(s, [A, B], ranks, multi_hop=True)
    assert _planned(p) == _brute(n, m, offsets, ranks)


@pytest.mark.parametrize("n,m,block,offsets", [
    (10, 4, 2, [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)]),
    (9, 3, 3, [(-2, 1), (1, -1), (0, 0)]),
    (7, 3, 1, [(-1, -1), (1, 1)]),
])
def test_block_cyclic_messages_equal_brute_force_enumeration(n, m, block, offsets):
    s, A, B = _stencil(n, m, offsets, block)
    p = dist.plan(s, [A, B], 3, multi_hop=True)
    assert _planned(p) == _brute(n, m, offsets, 3, block)
    assert all(m.explain().startswith(f"rank {m.dst % 3} (block {m.dst}) needs") for m in p.messages)


def test_five_point_halo_is_one_row_without_corners():
    s, A, B = _stencil(258, 256, [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)])
    p = dist.plan(s, [A, B], 4)
    assert p.partners(1) == [0, 2] and p.halo(1, "A") == (1, 1)
    assert p.halo(0, "A") == (0, 1) and p.halo(3, "A") == (1, 0)
    assert sum(m.count for m in p.received(1)) == 2 * 254  # the corners j = 0, m - 1 are never read
    assert "rank 1 needs A[64, 1:255] from rank 0 because B reads A[i - 1, j]" in p.explain(1)


def test_halo_wider_than_a_neighbours_block_is_refused_with_a_witness():
    s, A, B = _stencil(6, 3, [(-2, 0), (0, 0)])
    with pytest.raises(DistributionError, match=r"rank 3 needs A\[3, 0:3\] from rank 1, beyond its neighbours "
                                                r"\(rank 2: 1 along dimension 0\).*B reads A\[i - 2, j\].*B at i=5, "
                                                r"j=0 reads A\[3, 0\].*multi_hop=True"):
        dist.plan(s, [A, B], 4)
    assert dist.plan(s, [A, B], 4, multi_hop=True).partners(3) == [1]


def test_reading_another_ranks_computed_value_is_refused():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2, name="B")
    C = te.compute((8,), lambda i: te.if_then_else(i > 0, B[i - 1], B[i]), name="C")
    s = te.create_schedule(C.op)
    s[B].distribute(B.op.axis[0])
    s[C].distribute(C.op.axis[0])
    with pytest.raises(DistributionError, match=r"distribute on stage B: rank 1 runs C, which reads B\[i - 1\] "
                                                r"\(C at i=4 reads B\[3\]\).*two distributed kernels"):
        dist.plan(s, [A, C], 2)


@pytest.mark.parametrize("n,ranks", [(10, 3), (4, 4), (9, 2)])
def test_core_rows_read_only_owned_elements_and_rim_rows_do_not(n, ranks):
    offsets = [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)]
    m = 5
    s, A, B = _stencil(n, m, offsets)
    p = dist.plan(s, [A, B], ranks, overlap=True)
    for r, (lo, hi) in enumerate(blocks(n, ranks)):
        part = p.part(r)
        core = {i for piece in part.core for i in range(*piece["i"])}
        rim = {i for piece in part.rim for i in range(*piece["i"])}
        assert core | rim == set(range(lo, hi)) and not core & rim

        reads_local = {i for i in range(lo, hi) if all(
            lo <= i + di < hi for j in range(m) for di, dj in
            (offsets if all(0 <= i + a < n and 0 <= j + b < m for a, b in offsets) else [(0, 0)]))}
        assert core == reads_local
