"""Static index: exact agreement with an all-pairs box test, and input validation.

The strongest predicate is equality: the tree must return exactly the (query, item) pairs
an exhaustive test of every pair of padded boxes returns, each once, sorted. The reference
below recomputes the padded boxes from the documented definition (``DIST_REL_EPS`` times
each box's largest coordinate magnitude; swept boxes grown by the reach and the broad
phase's pad) instead of calling the module's helpers. The leaf size is patched in some
tests so that small meshes also build deep trees with partly empty leaves.
"""

from __future__ import annotations

import doctest
import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panda3d_ccd import _index, broadphase
from panda3d_ccd._tolerance import DIST_REL_EPS
from panda3d_ccd.broadphase import StaticIndex

FULL = 0xFFFFFFFF


# ---------------------------------------------------------------------------- references


def padded(lo, hi):
    lo = np.asarray(lo, float).reshape(-1, 3)
    hi = np.asarray(hi, float).reshape(-1, 3)
    scale = np.maximum(np.abs(lo).max(axis=1, initial=0), np.abs(hi).max(axis=1, initial=0))
    pad = DIST_REL_EPS * scale
    return lo - pad[:, None], hi + pad[:, None]


def brute_pairs(qlo, qhi, ilo, ihi, qmask=None, imask=None, qok=None):
    """(i, k) of every overlapping pair of closed boxes whose masks share a bit, sorted."""
    n, m = len(qlo), len(ilo)
    hit = np.ones((n, m), dtype=bool)
    for axis in range(3):
        hit &= qlo[:, None, axis] <= ihi[None, :, axis]
        hit &= ilo[None, :, axis] <= qhi[:, None, axis]
    if qmask is not None or imask is not None:
        qm = np.broadcast_to(FULL if qmask is None else np.asarray(qmask), (n,))
        im = np.broadcast_to(FULL if imask is None else np.asarray(imask), (m,))
        hit &= (qm[:, None] & im[None, :]) != 0
    if qok is not None:
        hit &= qok[:, None]
    i, k = np.nonzero(hit)
    return i.tolist(), k.tolist()


def brute_query(qlo, qhi, ilo, ihi, qmask=None, imask=None):
    return brute_pairs(*padded(qlo, qhi), *padded(ilo, ihi), qmask, imask)


def swept(p0, p1, reach):
    """Swept boxes by the broad phase's definition, and which rows are usable."""
    p0 = np.asarray(p0, float)
    p1 = np.asarray(p1, float)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.maximum(np.abs(p0).max(axis=1), np.abs(p1).max(axis=1))
        grow = reach + DIST_REL_EPS * np.maximum(scale, reach)
        lo = np.minimum(p0, p1) - grow[:, None]
        hi = np.maximum(p0, p1) + grow[:, None]
        ok = np.isfinite(hi - lo).all(axis=1)
    return lo, hi, ok


def brute_spheres(p0, p1, reach, ilo, ihi, qmask=None, imask=None, moving=None):
    lo, hi, ok = swept(p0, p1, reach)
    if moving is not None:
        ok &= moving
    with np.errstate(invalid="ignore"):
        return brute_pairs(lo, hi, *padded(ilo, ihi), qmask, imask, ok)


def listed(pairs):
    i, k = pairs
    assert i.dtype == np.int64 and k.dtype == np.int64
    return i.tolist(), k.tolist()


def triangle_boxes(a, b, c):
    return np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)


# ------------------------------------------------------------------------------- scenes


def random_boxes(rng, m, span=20.0, size=3.0):
    lo = rng.uniform(-span, span, (m, 3))
    return lo, lo + rng.uniform(0, size, (m, 3))


def terrain(side, offset=0.0):
    """Two triangles per cell of a bumpy height field ``side`` cells wide."""
    x, y = np.meshgrid(np.arange(side + 1.0), np.arange(side + 1.0), indexing="ij")
    grid = np.stack([x, y, np.sin(0.7 * x) + np.cos(0.5 * y)], axis=-1) + offset
    p, q = grid[:-1, :-1].reshape(-1, 3), grid[1:, :-1].reshape(-1, 3)
    r, s = grid[1:, 1:].reshape(-1, 3), grid[:-1, 1:].reshape(-1, 3)
    return np.concatenate([p, p]), np.concatenate([q, r]), np.concatenate([r, s])


def walls(rng, m, span=10.0):
    """Axis-aligned walls (zero thickness along one axis) and slanted ones."""
    a = rng.uniform(-span, span, (m, 3))
    b = a + rng.uniform(-5, 5, (m, 3))
    c = a + rng.uniform(-5, 5, (m, 3))
    flat = rng.integers(0, 3, m)
    rows = np.arange(m)
    half = rows < m // 2
    b[rows[half], flat[half]] = a[rows[half], flat[half]]
    c[rows[half], flat[half]] = a[rows[half], flat[half]]
    return a, b, c


def slivers(rng, m, span=10.0):
    """Long thin triangles: 20 units long, a millionth wide."""
    a = rng.uniform(-span, span, (m, 3))
    d = rng.normal(size=(m, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return a, a + 20 * d, a + 20 * d + 1e-6 * rng.normal(size=(m, 3))


def huge(rng, m, span=10.0):
    """A few triangles spanning everything, among small ones."""
    a, b, c = walls(rng, m, span)
    big = rng.choice(m, size=max(1, m // 10), replace=False)
    a[big] = [-1e3, -1e3, 0]
    b[big] = [1e3, -1e3, 5]
    c[big] = [0, 1e3, -5]
    return a, b, c


def one_cell(rng, m, span=10.0):
    """Every item in the same tiny place, many of them the very same box."""
    a = np.full((m, 3), 1.5) + rng.integers(0, 2, (m, 3)) * 1e-12
    return a, a + 1e-9, a + [0, 1e-9, 0]


MESHES = {"walls": walls, "slivers": slivers, "huge": huge, "one cell": one_cell}


def queries(rng, n, span=12.0):
    """Query boxes of every size from points to larger than the scene, some far away."""
    lo = rng.uniform(-span, span, (n, 3))
    size = rng.choice([0.0, 0.1, 1.0, 5.0, 40.0], size=(n, 1)) * rng.uniform(0, 1, (n, 3))
    far = rng.random(n) < 0.2
    lo[far] += 1e3
    return lo, lo + size


# ---------------------------------------------------------------------- query: agreement


@pytest.mark.parametrize("leaf", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("seed", range(4))
def test_random_boxes_equal_brute_force(leaf, seed):
    rng = np.random.default_rng(seed)
    ilo, ihi = random_boxes(rng, int(rng.integers(1, 300)))
    qlo, qhi = queries(rng, 60)
    with mock.patch.object(_index, "_LEAF", leaf):
        got = StaticIndex(ilo, ihi).query(qlo, qhi)
    assert listed(got) == brute_query(qlo, qhi, ilo, ihi)
    assert len(got[0]) > 0


@pytest.mark.parametrize("kind", sorted(MESHES))
@pytest.mark.parametrize("leaf", [1, 4])
@pytest.mark.parametrize("seed", range(3))
def test_awkward_meshes_equal_brute_force(kind, leaf, seed):
    rng = np.random.default_rng(seed)
    a, b, c = MESHES[kind](rng, 200)
    qlo, qhi = queries(rng, 80)
    with mock.patch.object(_index, "_LEAF", leaf):
        got = StaticIndex.of_triangles(a, b, c).query(qlo, qhi)
    assert listed(got) == brute_query(qlo, qhi, *triangle_boxes(a, b, c))


def test_huge_triangles_are_found_by_every_query_that_meets_them():
    rng = np.random.default_rng(7)
    a, b, c = huge(rng, 100)
    big = np.flatnonzero(a[:, 0] == -1e3)
    qlo = rng.uniform(-900, 900, (50, 3))
    qlo[:, 2] = -1.0
    qhi = qlo + [1, 1, 2]
    i, k = StaticIndex.of_triangles(a, b, c).query(qlo, qhi)
    assert set(zip(i.tolist(), k.tolist())) >= {(q, t) for q in range(50) for t in big}


def test_terrain_near_1e4_equals_brute_force():
    a, b, c = terrain(30, offset=1e4)
    rng = np.random.default_rng(3)
    qlo, qhi = queries(rng, 100, span=15.0)
    qlo += 1e4 + 15
    qhi += 1e4 + 15
    got = StaticIndex.of_triangles(a, b, c).query(qlo, qhi)
    assert listed(got) == brute_query(qlo, qhi, *triangle_boxes(a, b, c))
    assert len(got[0]) > 100


def test_boxes_touching_exactly_overlap():
    # Unit cubes on an integer lattice: neighbours share a face, edge or corner exactly.
    cells = np.stack(np.meshgrid(*[np.arange(4.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    index = StaticIndex(cells, cells + 1)
    i, k = index.query([[1.0, 1, 1]], [[2.0, 2, 2]])
    assert i.tolist() == [0] * 27
    touching = np.all((cells >= 0) & (cells <= 2), axis=1)
    assert k.tolist() == np.flatnonzero(touching).tolist()
    # A point query on a shared corner finds the eight cubes around it.
    assert index.query([[2.0, 2, 2]], [[2.0, 2, 2]])[1].size == 8
    # At the origin the pad is zero: only closed boxes meet there.
    origin = np.zeros((1, 3))
    corners = StaticIndex([[-1.0, -1, -1], [0, 0, 0]], [[0.0, 0, 0], [0, 0, 0]])
    assert listed(corners.query(origin, origin)) == ([0, 0], [0, 1])
    assert listed(corners.sphere_pairs(origin, origin, 0.0, moving=True)) == ([0, 0], [0, 1])


def test_pad_counts_a_gap_within_rounding_and_no_more():
    lo = np.array([[1e4, 0, 0]])
    hi = np.array([[1e4 + 1, 1, 1]])
    index = StaticIndex(lo, hi)
    gap = 2 * DIST_REL_EPS * 1e4  # each box is grown by about half of it
    near = index.query([[1e4 + 1 + 0.9 * gap, 0, 0]], [[1e4 + 2, 1, 1]])
    far = index.query([[1e4 + 1 + 1.1 * gap, 0, 0]], [[1e4 + 2, 1, 1]])
    assert listed(near) == ([0], [0])
    assert listed(far) == ([], [])


def test_extreme_coordinates_equal_brute_force():
    """Boxes from 1e-300 to 1e307 wide: the Morton codes and pads stay finite (an overflow
    or nan would raise here), and a sweep too long to measure is dropped."""
    lo = np.array([[-1e307, -1e307, -1e307], [1e306, 0, 0], [0, 0, 0], [1e-300, 0, 0]])
    hi = lo + [[1e307, 1, 1], [1e306, 1, 1], [1, 1, 1], [1e-300, 0, 0]]
    qlo = np.array([[0.5, 0.5, 0.5], [1.5e306, 0.5, 0.5], [-1e308, -1e308, -1e308]])
    qhi = np.array([[0.5, 0.5, 0.5], [1.5e306, 0.5, 0.5], [1e308, 1e308, 1e308]])
    p0, p1 = [[0.0, 0, 0], [1e308, 0, 0]], [[1.0, 0, 0], [-1e308, 0, 0]]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        index = StaticIndex(lo, hi)
        got = index.query(qlo, qhi)
        swept_pairs = index.sphere_pairs(p0, p1, 1.0)
    assert listed(got) == brute_query(qlo, qhi, lo, hi)
    assert listed(got) == ([0, 1, 2, 2, 2, 2], [2, 1, 0, 1, 2, 3])
    assert listed(swept_pairs) == ([0, 0], [2, 3])
    assert len(index) == 4


def test_duplicates_are_each_reported():
    lo = np.zeros((9, 3))
    hi = np.ones((9, 3))
    i, k = StaticIndex(lo, hi).query([[0.5, 0.5, 0.5]] * 2, [[0.5, 0.5, 0.5]] * 2)
    assert i.tolist() == [0] * 9 + [1] * 9
    assert k.tolist() == list(range(9)) * 2


def test_empty_index_and_empty_queries():
    empty = StaticIndex(np.empty((0, 3)), np.empty((0, 3)))
    assert listed(empty.query([[0.0, 0, 0]], [[1.0, 1, 1]])) == ([], [])
    assert listed(empty.sphere_pairs([[0.0, 0, 0]], [[1.0, 1, 1]], 1.0)) == ([], [])
    index = StaticIndex([[0.0, 0, 0]], [[1.0, 1, 1]])
    assert listed(index.query(np.empty((0, 3)), np.empty((0, 3)))) == ([], [])
    assert listed(index.sphere_pairs(np.empty((0, 3)), np.empty((0, 3)), 1.0)) == ([], [])


def test_queries_far_away_find_nothing():
    a, b, c = terrain(20)
    lo = np.array([[0.0, 0, 100], [-100, 5, 0], [5, 5, -1e6]])
    assert listed(StaticIndex.of_triangles(a, b, c).query(lo, lo + 10)) == ([], [])


@pytest.mark.parametrize("seed", range(3))
def test_masks_need_a_common_bit(seed):
    rng = np.random.default_rng(seed)
    ilo, ihi = random_boxes(rng, 150, span=5)
    qlo, qhi = queries(rng, 40, span=5)
    imask = rng.choice([0, 1, 2, 3, FULL], size=150)
    qmask = rng.choice([0, 1, 2, 4, FULL], size=40)
    got = StaticIndex(ilo, ihi, into_mask=imask).query(qlo, qhi, from_mask=qmask)
    assert listed(got) == brute_query(qlo, qhi, ilo, ihi, qmask, imask)
    assert len(got[0]) > 0


BOX_INT = st.integers(-8, 8).map(float)
SIZES = st.sampled_from([0.0, 0.0, 1.0, 2.0, 5.0, 1e3])


@st.composite
def box_lists(draw, max_m):
    """Boxes on an integer lattice (touching is common), of sizes from points to huge,
    moved together near 0 or near 1e4."""
    m = draw(st.integers(0, max_m))
    lo = np.array(draw(st.lists(st.tuples(BOX_INT, BOX_INT, BOX_INT), min_size=m, max_size=m)))
    size = np.array(draw(st.lists(st.tuples(SIZES, SIZES, SIZES), min_size=m, max_size=m)))
    lo = lo.reshape(m, 3)
    return lo, lo + size.reshape(m, 3)


@settings(max_examples=150, deadline=None)
@given(
    items=box_lists(80),
    asks=box_lists(20),
    offset=st.sampled_from([0.0, 1e4, -1e4]),
    leaf=st.sampled_from([1, 2, 4]),
    masks=st.booleans(),
    data=st.data(),
)
def test_query_equals_brute_force(items, asks, offset, leaf, masks, data):
    (ilo, ihi), (qlo, qhi) = items, asks
    ilo, ihi, qlo, qhi = ilo + offset, ihi + offset, qlo + offset, qhi + offset
    imask = qmask = None
    if masks:
        bits = st.sampled_from([0, 1, 2, 3, FULL])
        draw = data.draw
        imask = np.array(draw(st.lists(bits, min_size=len(ilo), max_size=len(ilo))), np.int64)
        qmask = np.array(draw(st.lists(bits, min_size=len(qlo), max_size=len(qlo))), np.int64)
    with mock.patch.object(_index, "_LEAF", leaf):
        got = StaticIndex(ilo, ihi, imask).query(qlo, qhi, qmask)
    assert listed(got) == brute_query(qlo, qhi, ilo, ihi, qmask, imask)


def test_large_mesh_equals_brute_force():
    """A full-depth tree (about 5,000 triangles, 11 levels) and 500 spheres over it."""
    a, b, c = terrain(50)
    rng = np.random.default_rng(11)
    p0 = rng.uniform([-5, -5, -2], [55, 55, 4], (500, 3))
    p1 = p0 + rng.normal(size=(500, 3)) * np.where(np.arange(500) < 50, 20.0, 0.5)[:, None]
    radius = rng.uniform(0, 1, 500)
    got = StaticIndex.of_triangles(a, b, c).sphere_pairs(p0, p1, radius)
    assert listed(got) == brute_spheres(p0, p1, radius, *triangle_boxes(a, b, c))
    assert len(got[0]) > 1000


# ------------------------------------------------------------- swept spheres: agreement


@st.composite
def sweeps(draw, max_n=25):
    n = draw(st.integers(0, max_n))
    coord = st.integers(-10, 10).map(float)
    p0 = np.array(draw(st.lists(st.tuples(coord, coord, coord), min_size=n, max_size=n)))
    p0 = p0.reshape(n, 3)
    step = st.sampled_from([0.0, 0.5, 3.0, 40.0])
    d = np.array(draw(st.lists(st.tuples(step, step, step), min_size=n, max_size=n)))
    sign = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=3 * n, max_size=3 * n)))
    p1 = p0 + d.reshape(n, 3) * sign.reshape(n, 3)
    radius = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    margin = np.array(draw(st.lists(st.sampled_from([0.0, 0.25]), min_size=n, max_size=n)))
    moving = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    mask = np.array(draw(st.lists(st.sampled_from([0, 1, 2, FULL]), min_size=n, max_size=n)))
    bad = np.array(draw(st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=n, max_size=n)))
    p0[bad == 1, 1] = np.nan
    p1[bad == 2, 0] = np.inf
    return p0, p1, radius, margin, moving, mask.astype(np.int64)


@settings(max_examples=150, deadline=None)
@given(scene=sweeps(), items=box_lists(60), imasks=st.booleans(), leaf=st.sampled_from([1, 4]))
def test_sphere_pairs_equal_brute_force(scene, items, imasks, leaf):
    p0, p1, radius, margin, moving, fmask = scene
    ilo, ihi = items
    imask = (np.arange(len(ilo)) % 4) if imasks else None
    with mock.patch.object(_index, "_LEAF", leaf):
        index = StaticIndex(ilo, ihi, imask)
        got = index.sphere_pairs(p0, p1, radius, fmask, moving=moving, margin=margin)
    want = brute_spheres(p0, p1, radius + margin, ilo, ihi, fmask, imask, moving)
    assert listed(got) == want


def test_sphere_pairs_boxes_match_the_broad_phase():
    """The same sweeps as moving spheres and as queries of an index of their own swept
    boxes, taken from the broad phase's definition: the pairs agree."""
    rng = np.random.default_rng(5)
    p0 = rng.uniform(-10, 10, (40, 3))
    p1 = p0 + rng.normal(size=(40, 3)) * 3
    radius = rng.uniform(0, 1, 40)
    lo, hi, _ = swept(p0, p1, radius)
    # Items whose padded boxes are the spheres' own swept boxes: the pad is then applied
    # twice on the item side, so compare against that definition.
    index = StaticIndex(lo, hi)
    got = listed(index.sphere_pairs(p0, p1, radius))
    assert got == brute_pairs(lo, hi, *padded(lo, hi))
    i, k = got
    assert set(zip(i, k)) >= {(j, j) for j in range(40)}


def dense_hits(p0, p1, reach, ilo, ihi, samples=64):
    """(sphere, item) pairs where the sphere's box at one of ``samples`` points of its path
    overlaps the item's box: a swept piece holding the path must find each."""
    out = set()
    for t in np.linspace(0, 1, samples):
        c = p0 + t * (p1 - p0)
        lo, hi = c - reach[:, None], c + reach[:, None]
        i, k = brute_pairs(lo, hi, ilo, ihi)
        out |= set(zip(i, k))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_split_finds_every_item_along_the_path_and_no_more_than_whole_boxes(seed):
    a, b, c = terrain(40)
    rng = np.random.default_rng(seed)
    n = 100
    p0 = rng.uniform([0, 0, -1], [40, 40, 3], (n, 3))
    fast = np.arange(n) < 30
    p1 = p0 + rng.normal(size=(n, 3)) * np.where(fast, 25.0, 0.5)[:, None]
    reach = np.full(n, 0.5)
    index = StaticIndex.of_triangles(a, b, c)
    cut = index.sphere_pairs(p0, p1, reach, split=fast)
    whole = index.sphere_pairs(p0, p1, reach)
    got = set(zip(*listed(cut)))
    i, k = cut
    assert np.all(np.diff(i * len(a) + k) > 0)  # sorted, each once
    assert got <= set(zip(*listed(whole)))
    assert got >= dense_hits(p0, p1, reach, *triangle_boxes(a, b, c))
    assert len(got) < 0.5 * len(whole[0])  # the fast movers' diagonals are left out


# ------------------------------------------------------------- determinism and identity


def snapshot(obj):
    """Every array an object holds (in its attributes, lists and tuples), copied."""
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, (list, tuple)):
        return [snapshot(x) for x in obj]
    if hasattr(obj, "__dict__"):
        return {k: snapshot(v) for k, v in sorted(vars(obj).items())}
    return obj


def assert_same(x, y):
    if isinstance(x, np.ndarray):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype
    elif isinstance(x, dict):
        assert x.keys() == y.keys()
        for key in x:
            assert_same(x[key], y[key])
    elif isinstance(x, list):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert_same(u, v)
    else:
        assert x == y


def test_building_twice_gives_the_same_index_and_answers():
    rng = np.random.default_rng(2)
    a, b, c = huge(rng, 500)
    qlo, qhi = queries(rng, 100)
    first, second = StaticIndex.of_triangles(a, b, c), StaticIndex.of_triangles(a, b, c)
    assert_same(snapshot(first), snapshot(second))
    assert listed(first.query(qlo, qhi)) == listed(second.query(qlo, qhi))


def test_queries_neither_rebuild_nor_change_the_index():
    rng = np.random.default_rng(4)
    lo, hi = random_boxes(rng, 400)
    given_lo, given_hi = lo.copy(), hi.copy()
    imask = rng.integers(0, 4, 400)
    index = StaticIndex(lo, hi, into_mask=imask)
    before = snapshot(index)
    lo += 100.0  # the caller's arrays are not the index's
    qlo, qhi = queries(rng, 50)
    qmask = rng.integers(0, 4, 50)
    with mock.patch.object(StaticIndex, "_build", side_effect=AssertionError("rebuilt")):
        first = listed(index.query(qlo, qhi, from_mask=qmask))
        index.sphere_pairs(qlo, qhi, 1.0, split=True)
        again = listed(index.query(qlo, qhi, from_mask=qmask))
    assert_same(snapshot(index), before)
    assert first == again == brute_query(qlo, qhi, given_lo, given_hi, qmask, imask)
    assert len(first[0]) > 0


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "lo, hi, message",
    [
        ([[0.0, 0]], [[1.0, 1]], r"lo must have shape \(n, 3\), got \(1, 2\)"),
        ([[0.0, 0, 0]], [[1.0, 1, 1]] * 2, r"hi must have the same shape as lo \(1, 3\), got \(2"),
        ([[0.0, np.nan, 0]], [[1.0, 1, 1]], r"lo must be finite \(item boxes\), got \[0.0, nan, 0"),
        ([[0.0, 0, 0]] * 2, [[1.0, 1, 1], [1, 1, np.inf]], r"finite \(item .*1.0, inf\] at row 1"),
        ([[0.0, 0, 0]], [[1.0, -1, 1]], r"hi must be >= lo, got lo \[0.0, 0.0, 0.0\] and hi \["),
    ],
)  # fmt: skip
def test_bad_item_boxes(lo, hi, message):
    with pytest.raises(ValueError, match=message):
        StaticIndex(lo, hi)


def test_bad_arguments_name_themselves():
    index = StaticIndex([[0.0, 0, 0]], [[1.0, 1, 1]])
    one = [[0.0, 0, 0]]
    cases = [
        (lambda: StaticIndex(one, one, into_mask=[-1]), r"into_mask must hold 32-bit"),
        (lambda: StaticIndex(one, one, into_mask=[1, 2]), r"into_mask must be a scalar or"),
        (lambda: StaticIndex.of_triangles(one, one, [[0.0, 0]]), r"c must have shape \(n, 3\)"),
        (lambda: StaticIndex.of_triangles(one, one * 2, one * 2), r"b must have the same shape"),
        (
            lambda: StaticIndex.of_triangles(one, [[0.0, np.inf, 0]], one),
            r"b must be finite, got \[0.0, inf, 0.0\] at row 0",
        ),
        (lambda: index.query([[0.0, 0, np.nan]], one), r"lo must be finite \(query boxes\)"),
        (lambda: index.query([[1.0, 0, 0]], one), r"hi must be >= lo"),
        (lambda: index.query(one, one, from_mask=2.0), r"from_mask must be an integer array"),
        (lambda: index.sphere_pairs(one, one, -0.5), r"radius must be finite and >= 0, got -0.5"),
        (lambda: index.sphere_pairs(one, one, 1.0, margin=np.nan), r"margin must be finite"),
        (lambda: index.sphere_pairs(one, one * 2, 1.0), r"p1 must have the same shape as p0"),
        (lambda: index.sphere_pairs([0.0, 0], one, 1.0), r"p0 must have shape \(n, 3\)"),
        (lambda: index.sphere_pairs(one, one, 1.0, moving=[1]), r"moving must be a boolean"),
        (lambda: index.sphere_pairs(one, one, 1.0, split=[True] * 2), r"split must be a scalar"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_doctests():
    result = doctest.testmod(_index)
    assert result.failed == 0
    assert result.attempted >= 4


def test_broadphase_exports_the_index():
    assert "StaticIndex" in broadphase.__all__
    assert broadphase.StaticIndex is _index.StaticIndex
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        broadphase.Nothing  # noqa: B018


@pytest.mark.parametrize("seed", range(6))
def test_few_pairs_tested_all_at_once_equal_the_tree_and_brute_force(seed):
    """A query of few (query, item) pairs tests them all at once (``_ALL_PAIRS``): the
    same pairs as the tree's descent and as brute force, for box queries, straight
    segments and swept boxes, with masks that leave some pairs out."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    ilo, ihi = random_boxes(rng, m)
    imask = rng.choice([1, 2, 3], m)
    n = int(rng.integers(1, 512 // m + 1))
    qlo, qhi = queries(rng, n)
    qmask = rng.choice([1, 2, 3], n)
    # Half the queries start at an item (some pairs are sure to be found).
    near = (rng.random(n) < 0.5) | (np.arange(n) == 0)
    at = 0.5 * (ilo + ihi)[rng.integers(0, m, n)]
    qlo[near], qhi[near] = at[near] - 0.1, at[near] + 0.1
    qmask[0] = 3
    p0 = np.where(near[:, None], at, rng.uniform(-12, 12, (n, 3)))
    p1 = p0 + rng.normal(0, 4, (n, 3))
    reach = rng.uniform(0, 1, n)
    split = rng.random(n) < 0.5
    index = StaticIndex(ilo, ihi, imask)
    answers = []
    for most in (_index._ALL_PAIRS, 0):
        with mock.patch.object(_index, "_ALL_PAIRS", most):
            answers.append((
                listed(index.query(qlo, qhi, qmask)),
                listed(index.sphere_pairs(p0, p1, reach, qmask, split=split)),
                listed(index.sphere_pairs(p0, p1, reach, qmask)),
            ))  # fmt: skip
    assert answers[0] == answers[1]
    assert answers[0][0] == brute_query(qlo, qhi, ilo, ihi, qmask, imask)
    assert answers[0][2] == brute_spheres(p0, p1, reach, ilo, ihi, qmask, imask)
    assert answers[0][0][0] and answers[0][2][0]  # (pairs are found)


def _slab_reference(origin, inv, grow, q, lo, hi):
    """The slab test of each (segment, box) pair in plain Python floats: the same IEEE
    operations per element; a nan anywhere (an empty slot) is no hit."""
    out = []
    for j, s in enumerate(q.tolist()):
        enter, leave = [], []
        for axis in range(3):
            g, o, iv = float(grow[s]), float(origin[axis, s]), float(inv[axis, s])
            t1 = (float(lo[axis, j]) - g - o) * iv
            t2 = (float(hi[axis, j]) + g - o) * iv
            enter.append(min(t1, t2))
            leave.append(max(t1, t2))
        if any(math.isnan(t) for t in enter + leave):
            out.append(False)
            continue
        near, far = max(enter), min(leave)
        out.append(near <= far and near <= 1.0 and far >= 0.0)
    return np.array(out, bool)


@pytest.mark.parametrize("pairs", [1, 37, _index._FUSED_SLABS, _index._FUSED_SLABS + 1, 5000])
def test_the_slab_test_on_whole_blocks_and_by_axis_equals_plain_floats(pairs):
    """Few (segment, box) pairs are slab-tested on (3, p) blocks, many an axis at a time:
    both give what plain floats give pair by pair, with segments still along an axis (a
    huge inverse), boxes touched at a segment's very end, and empty (nan) slots."""
    rng = np.random.default_rng(pairs)
    n = 50
    p0 = rng.uniform(-10, 10, (n, 3))
    p1 = p0 + rng.normal(0, 5, (n, 3))
    p1[: n // 4, 0] = p0[: n // 4, 0]  # still along x
    origin, inv, grow, _scale = _index._segments(p0, p1, rng.uniform(0, 1, n))
    q = rng.integers(0, n, pairs)
    lo = rng.uniform(-12, 12, (3, pairs))
    hi = lo + rng.uniform(0, 4, (3, pairs))
    end = rng.random(pairs) < 0.2  # boxes whose low corner is a segment's end, exactly
    lo[:, end] = p1[q[end]].T
    lo[:, rng.random(pairs) < 0.1] = np.nan
    got = _index._crosses_gathered(origin, inv, grow, q, lo, hi)
    np.testing.assert_array_equal(got, _slab_reference(origin, inv, grow, q, lo, hi))
    if pairs > 1:
        assert got.any() and not got.all()


def test_morton_codes_interleave_the_bits_of_the_three_axes():
    rng = np.random.default_rng(3)
    lo = rng.uniform(-50, 50, (3, 200))
    hi = lo + rng.uniform(0, 3, (3, 200))
    codes = _index._morton(lo, hi)
    centre = lo * 0.5 + hi * 0.5
    low = centre.min(axis=1)
    span = (centre.max(axis=1) * 0.5 - low * 0.5).max()
    top = float(2**_index._MORTON_BITS - 1)
    cells = np.clip((centre - low[:, None]) * 0.5 / span * top, 0, top).astype(np.uint64)
    for code, (x, y, z) in zip(codes.tolist(), cells.T.tolist()):
        want = 0
        for bit in range(_index._MORTON_BITS):
            for value, shift in ((x, 2), (y, 1), (z, 0)):
                want |= ((value >> bit) & 1) << (3 * bit + shift)
        assert code == want
